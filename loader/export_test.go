package loader

import "context"

// MintSessionSetting returns setting name as worker's session of s has it once its session
// settings are made (OpenWorker, then connect, as before its first batch).
func MintSessionSetting(ctx context.Context, s *MintSink, worker int, name string) (string, error) {
	sw, err := s.OpenWorker(ctx, worker)
	if err != nil {
		return "", err
	}
	w := sw.(*mintWorker)
	defer w.Close()
	if err := w.connect(ctx); err != nil {
		return "", err
	}
	var v string
	err = w.conn.QueryRow(ctx, `select current_setting($1)`, name).Scan(&v)
	return v, err
}
