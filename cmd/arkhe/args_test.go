package main

import (
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestHoistFlags(t *testing.T) {
	t.Parallel()
	app := newApp(&env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	cases := []struct{ in, want string }{
		{"arkhe naan add 99999 --name test", "arkhe naan add --name test 99999"},
		{"arkhe --quiet naan add 99999 --not-authoritative --redirect x", "arkhe --quiet naan add --not-authoritative --redirect x 99999"},
		{"arkhe --database-url u shoulder retire /x9 --naan 99999", "arkhe --database-url u shoulder retire --naan 99999 /x9"},
		{"arkhe ark check ark:/1/x --check-zone none", "arkhe ark check --check-zone none ark:/1/x"},
		{"arkhe ark check -- --check-zone", "arkhe ark check -- --check-zone"},
		{"arkhe naan", "arkhe naan"},
		{"arkhe ark check ark:/1/x -q --check-zone none", "arkhe -q ark check --check-zone none ark:/1/x"},
		{"arkhe naan list --data-dir /d", "arkhe --data-dir /d naan list"},
		// a command with subcommands of its own, run itself: global flags after it move before it
		{"arkhe linkcheck --limit 5 --quiet", "arkhe --quiet linkcheck --limit 5"},
		{"arkhe linkcheck --database-url u --limit 5", "arkhe --database-url u linkcheck --limit 5"},
		{"arkhe linkcheck --data-dir /d exclusions --all", "arkhe --data-dir /d linkcheck exclusions --all"},
	}
	for _, c := range cases {
		got := hoistFlags(app, strings.Fields(c.in))
		if !reflect.DeepEqual(got, strings.Fields(c.want)) {
			t.Errorf("hoistFlags(%q) = %q, want %q", c.in, strings.Join(got, " "), c.want)
		}
		// a completion request keeps --generate-bash-completion last, where urfave/cli looks
		got = hoistArgs(app, append(strings.Fields(c.in), completionFlag))
		c.want += " " + completionFlag
		if !reflect.DeepEqual(got, strings.Fields(c.want)) {
			t.Errorf("hoistFlags(%q) = %q, want %q", c.in, strings.Join(got, " "), c.want)
		}
	}
}
