//go:build !unix

package progress

import "errors"

func mkfifo(string) error { return errors.New("no mkfifo") }
