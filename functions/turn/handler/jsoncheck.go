package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/commonly/runtime/shared/jsonraw"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/turns"
)

// checkJSON checks what encoding/json lets through, walking raw's tokens
// beside t (the type raw will be decoded into):
//   - one JSON object, and nothing after it;
//   - the names of an object decoded into a struct are exactly its
//     fields' JSON names (encoding/json matches them without case), and
//     no name is given twice (encoding/json keeps the last, another
//     parser may keep the first);
//   - every string, names included, is valid UTF-8 without an escape of
//     an unpaired surrogate (encoding/json replaces either with U+FFFD).
//
// A name or value it cannot place (a type encoding/json will refuse
// anyway) is walked without checks; decoding then reports the type.
func checkJSON(raw []byte, t reflect.Type) error {
	w := &jsonWalk{dec: json.NewDecoder(bytes.NewReader(raw)), raw: raw}
	tok, err := w.dec.Token()
	if err != nil {
		return jsonSyntax(err)
	}
	if tok != json.Delim('{') {
		return malformed("body", "must be a JSON object")
	}
	if err := w.object(t, ""); err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return malformed("body", "has data after the JSON object")
	}
	return nil
}

type jsonWalk struct {
	dec *json.Decoder
	raw []byte
}

// value walks the value at the decoder's position, of type t (nil when
// unknown), named field.
func (w *jsonWalk) value(t reflect.Type, field string) error {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return jsonSyntax(err)
	}
	switch tok {
	case json.Delim('{'):
		return w.object(t, field)
	case json.Delim('['):
		return w.array(t, field)
	}
	if _, ok := tok.(string); ok && !jsonraw.FaithfulString(w.raw[start:w.dec.InputOffset()]) {
		return notUTF8(field)
	}
	return nil
}

// object walks an object's members after its '{'.
func (w *jsonWalk) object(t reflect.Type, field string) error {
	t = deref(t)
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = jsonFields(t, map[string]reflect.Type{})
	}
	seen := map[string]bool{}
	for w.dec.More() {
		start := w.dec.InputOffset()
		tok, err := w.dec.Token()
		if err != nil {
			return jsonSyntax(err)
		}
		name, _ := tok.(string) // an object's tokens alternate name, value
		if !jsonraw.FaithfulString(w.raw[start:w.dec.InputOffset()]) {
			return notUTF8(orBody(field))
		}
		path := clipName(name)
		if field != "" {
			path = field + "." + path
		}
		var ft reflect.Type
		switch {
		case fields != nil:
			var ok bool
			if ft, ok = fields[name]; !ok {
				return malformed(path, "is not a known field")
			}
		case t != nil && t.Kind() == reflect.Map:
			ft = t.Elem()
		}
		if seen[name] {
			return turns.Invalid(path, "is given more than once")
		}
		seen[name] = true
		if err := w.value(ft, path); err != nil {
			return err
		}
	}
	return w.close()
}

// array walks an array's elements after its '['; they are named as the
// array is.
func (w *jsonWalk) array(t reflect.Type, field string) error {
	var elem reflect.Type
	if t = deref(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for w.dec.More() {
		if err := w.value(elem, field); err != nil {
			return err
		}
	}
	return w.close()
}

// close reads the '}' or ']' that More said comes next.
func (w *jsonWalk) close() error {
	if _, err := w.dec.Token(); err != nil {
		return jsonSyntax(err)
	}
	return nil
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonFields adds the JSON names of struct type t's fields, as
// encoding/json names them, with their types.
func jsonFields(t reflect.Type, into map[string]reflect.Type) map[string]reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			if ft := deref(f.Type); ft.Kind() == reflect.Struct {
				jsonFields(ft, into)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		into[name] = f.Type
	}
	return into
}

// jsonSyntax words a tokenizer error.
func jsonSyntax(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return malformed("body", fmt.Sprintf("is not valid JSON (at byte %d)", se.Offset))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return malformed("body", "is truncated JSON")
	}
	return malformed("body", "is not a valid JSON object")
}

func notUTF8(field string) error {
	return turns.Invalid(field, "is not valid UTF-8 (or escapes an unpaired surrogate)")
}

func orBody(field string) string {
	if field == "" {
		return "body"
	}
	return field
}

// clipName bounds a client's field name before it is shown back.
func clipName(name string) string { return textcap.Bytes(name, 128) }
