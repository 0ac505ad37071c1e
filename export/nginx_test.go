package export_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/export"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// nginxBinary is Debian's nginx (make nginx installs it).
func nginxBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	t.Fatal("nginx not found: make nginx installs it")
	return ""
}

// startNginx runs nginx in the foreground on a free loopback port with the exported
// configuration (httpConf in the http block, serverConf in the server), its prefix, pid and logs
// in a directory of the test's own, and returns its base URL. As root, the worker runs as nobody.
func startNginx(t *testing.T, httpConf, serverConf string) string {
	t.Helper()
	bin := nginxBinary(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	userLine := ""
	if os.Geteuid() == 0 {
		group := "nogroup"
		if _, err := user.LookupGroup(group); err != nil {
			group = "nobody"
		}
		userLine = "user nobody " + group + ";"
		// the worker reads the map: the test's own directories above it (t.TempDir makes them
		// 0700) must be searchable by others; nothing above the test's temporary root is touched
		root := filepath.Dir(filepath.Dir(filepath.Dir(httpConf)))
		for d := filepath.Dir(httpConf); strings.HasPrefix(d, root) && d != filepath.Dir(root); d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
				_ = os.Chmod(d, fi.Mode()&os.ModePerm|0o005)
			}
		}
	}
	conf := fmt.Sprintf(`%s
daemon off;
master_process on;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    include %[3]s;
    server {
        listen 127.0.0.1:%[4]d;
        include %[5]s;
    }
}
`, userLine, dir, httpConf, port, serverConf)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-p", dir, "-c", cf, "-t").CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", cf)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt) // SIGINT: fast shutdown
		_ = cmd.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	// wait until it listens (a start, not a timing: each try is a connect)
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return base
		}
		if i == 500 {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx does not listen on %d: %v\n%s", port, err, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestExportNginx serves a ledger of real EZID and N2T ARKs through a real nginx with the
// exported map and configuration: a redirect in both label forms, suffix passthrough at / and
// ., a tombstone, a reserved and an unknown ARK, an inflection, a forwarded NAAN and shoulder.
func TestExportNginx(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	l := &ledger.Ledger{Pool: pool}
	loadEZID(t, l)
	ctx := t.Context()
	// a NAAN resolved elsewhere, and a shoulder delegated with a template
	if _, err := pool.Exec(ctx, `insert into naan (naan, name, is_authoritative, redirect) values ('99998', 'elsewhere', false, 'https://resolver.example.org/')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `insert into shoulder (naan, shoulder, status, redirect) values ('13960', '/t9', 'delegated', 'https://t9.example.org/id?ark=${pid}')`); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "conf")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "arks.map")
	res := run(t, l, export.Config{Format: export.Nginx, Path: path})
	if len(res.Files) != 3 || res.Forwards != 2 {
		t.Fatalf("files %v, %d forwarding rules", res.Files, res.Forwards)
	}
	// the bucket holds the widest ledger key, whatever the longest key of this export
	httpConf, err := os.ReadFile(res.Files[1])
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^map_hash_bucket_size ([0-9]+);$`).FindSubmatch(httpConf); m == nil {
		t.Errorf("%s sets no map_hash_bucket_size", res.Files[1])
	} else if n, _ := strconv.Atoi(string(m[1])); n < 256 {
		t.Errorf("map_hash_bucket_size %d, want at least 256", n)
	}
	base := startNginx(t, res.Files[1], res.Files[2])
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(p string) (int, string) {
		t.Helper()
		resp, err := client.Get(base + p)
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}
	// ark:/13960/t00000075 of the N2T sample
	target := scalar[string](t, pool, `select url from ark where ark = '13960/t00000075'`)
	if !strings.HasPrefix(target, "http://www.archive.org/details/") {
		t.Fatalf("N2T sample target %q", target)
	}
	tomb := scalar[string](t, pool, `select ark from ark where status = 'unavailable' order by ark limit 1`)
	reserved := scalar[string](t, pool, `select ark from ark where status = 'reserved' order by ark limit 1`)
	cases := []struct {
		path     string
		status   int
		location string
	}{
		{"/ark:/13960/t00000075", 302, target},
		{"/ark:13960/t00000075", 302, target},
		{"/ARK:/13960/t00000075/", 302, target},
		{"/ark:13960/t00000075/page/3.jpg", 302, target + "/page/3.jpg"},
		{"/ark:13960/t00000075.pdf", 302, target + ".pdf"},
		{"/ark:13960/t00000075x", 404, ""}, // not at a / or . boundary
		{"/ark:" + tomb, 410, ""},
		{"/ark:" + tomb + "/part", 410, ""},
		{"/ark:" + reserved, 404, ""},
		{"/ark:13960/t00000075?info", 404, ""}, // inflection: no description in a map
		{"/ark:13960/nosuchname", 404, ""},
		{"/ark:99998/x5abc/p", 302, "https://resolver.example.org/ark:99998/x5abc/p"},
		{"/ark:/13960/t9zz", 302, "https://t9.example.org/id?ark=ark:/13960/t9zz"},
		{"/ark:12345/x9unknown", 404, ""},
	}
	for _, c := range cases {
		status, loc := get(c.path)
		if status != c.status || loc != c.location {
			t.Errorf("GET %s: %d %q, want %d %q", c.path, status, loc, c.status, c.location)
		}
	}
	// the qualifier ARK of EZID resolves itself, and passes a suffix through
	q := scalar[string](t, pool, `select url from ark where ark = '87602/m4/M3174'`)
	if status, loc := get("/ark:/87602/m4/M3174/v2"); status != 302 || loc != q+"/v2" {
		t.Errorf("qualifier ARK with a suffix: %d %q, want 302 %q", status, loc, q+"/v2")
	}
	// a stale export's temporary files are gone, the three files are in place
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "arks-http.conf arks-server.conf arks.map" {
		t.Errorf("files in the output directory: %v", names)
	}
}
