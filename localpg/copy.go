package localpg

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// RemoveIdleDataDirs removes, with everything in them, the directories that match pattern
// (filepath.Glob) other than keep and were last modified more than maxIdle ago: the kept clusters
// that copies are made from (seeds), whose users touch them (os.Chtimes) at every use. Files that
// match, such as a seed's lock file, are left alone: one may be held. Errors are ignored: a
// directory left is only space.
func RemoveIdleDataDirs(pattern, keep string, maxIdle time.Duration) {
	dirs, _ := filepath.Glob(pattern)
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && dir != keep && time.Since(fi.ModTime()) > maxIdle {
			_ = os.RemoveAll(dir)
		}
	}
}

// CopyDataDir copies the data directory of a stopped cluster, src, to dst, which must not
// exist: directories, regular files and symbolic links, with their permission bits and, when
// running as root, their owner (a cluster made for the server account stays that account's).
// Anything else in src (a socket, a device) is an error naming it. A copy of a cluster that was
// shut down cleanly starts as that cluster did; copying a running cluster is not supported.
func CopyDataDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, fi.Mode().Perm()); err != nil {
				return err
			}
			if err := os.Chmod(target, fi.Mode().Perm()); err != nil { // past the umask
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFile(path, target, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a directory, regular file or symbolic link", path)
		}
		return keepOwner(target, fi)
	})
}

// copyFile copies the regular file src to the new file dst with permission bits perm.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(perm); err != nil { // past the umask
		out.Close()
		return err
	}
	return out.Close()
}
