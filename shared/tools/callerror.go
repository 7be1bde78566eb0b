package tools

import "log/slog"

// CallError is a tool's failed outbound call worded for the model: Error
// is the fixed, client-safe Message; the Cause (a broker's or a backend's
// error) is for the log only, through LogValue, which the loop logs for
// every tool error that has one. Unwrap is deliberately absent: the
// wording stands for the failure, as a fixed error would.
type CallError struct {
	Message string
	Cause   error
}

func (e *CallError) Error() string { return e.Message }

// LogValue puts the cause beside the message in structured logs.
func (e *CallError) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("msg", e.Message)}
	if e.Cause != nil {
		attrs = append(attrs, slog.String("cause", e.Cause.Error()))
	}
	return slog.GroupValue(attrs...)
}
