package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
)

//go:embed static
var staticFS embed.FS

// importMap resolves the typed client's two packages to the files the
// console serves (library), so the compiled client runs unchanged in the
// browser as it does under node.
const importMap = `{"imports":{"openapi-fetch":"/console/lib/openapi-fetch.mjs","eventsource-parser":"/console/lib/eventsource-parser.js"}}`

// importMapMark is where a page takes the import map.
const importMapMark = "<!--importmap-->"

// pages are the console's and the reference's pages and static files.
type pages struct {
	index, reference []byte
	static           http.Handler
	// csp lets a page load only what this origin serves; the import map
	// is the one inline script, allowed by its hash. Swagger UI sets
	// style attributes, hence inline styles.
	csp string
}

func newPages() (pages, error) {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return pages{}, err
	}
	var p pages
	tag := []byte(`<script type="importmap">` + importMap + `</script>`)
	for name, dst := range map[string]*[]byte{"index.html": &p.index, "docs.html": &p.reference} {
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			return pages{}, err
		}
		if !bytes.Contains(b, []byte(importMapMark)) {
			return pages{}, fmt.Errorf("console page %s has no %s", name, importMapMark)
		}
		*dst = bytes.Replace(b, []byte(importMapMark), tag, 1)
	}
	sum := sha256.Sum256([]byte(importMap))
	p.csp = "default-src 'none'; script-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
		"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	p.static = http.FileServerFS(sub)
	return p, nil
}

func (p pages) console(w http.ResponseWriter, _ *http.Request) { writeHTML(w, p.index) }
func (p pages) docs(w http.ResponseWriter, _ *http.Request)    { writeHTML(w, p.reference) }

func writeHTML(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}

// library is the files the pages load from the npm packages and the
// compiled client, each by a fixed name: nothing else of the disk is
// served.
func (c *Console) library(w http.ResponseWriter, r *http.Request) {
	files := map[string]struct{ dir, path, kind string }{
		"client.js":             {c.cfg.ClientDir, "dist/client.js", "text/javascript"},
		"openapi-fetch.mjs":     {c.cfg.ClientDir, "node_modules/openapi-fetch/dist/index.mjs", "text/javascript"},
		"eventsource-parser.js": {c.cfg.ClientDir, "node_modules/eventsource-parser/dist/index.js", "text/javascript"},
		"swagger-ui.css":        {c.cfg.WebDir, "node_modules/swagger-ui-dist/swagger-ui.css", "text/css"},
		"swagger-ui-bundle.js":  {c.cfg.WebDir, "node_modules/swagger-ui-dist/swagger-ui-bundle.js", "text/javascript"},
	}
	f, ok := files[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(f.path)))
	if err != nil {
		http.Error(w, r.PathValue("file")+" is not built: `make console-deps` builds it (make run does)", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", f.kind+"; charset=utf-8")
	_, _ = w.Write(b)
}
