package verify

import (
	"reflect"
	"testing"

	"github.com/arkhe-ledger/arkhe/ledger"
)

func TestExpectationsFrom(t *testing.T) {
	t.Parallel()
	ms := []ledger.Migration{
		{Version: 1, SQL: `create function f_del() returns trigger language plpgsql as $$ begin raise exception 'no'; end $$;
do $$
declare t text;
begin
    foreach t in array array['a', 'b'] loop
        execute format('create trigger %I before delete on %I for each statement execute function f_del()', t || '_no_delete', t);
    end loop;
end $$;
create trigger keep_me before update on a for each row execute function f_upd();
create trigger gone before update on b for each row execute function f_upd();`},
		{Version: 2, SQL: `drop trigger gone on b;
drop trigger if exists keep_me on a;
create trigger keep_me before update on a for each row execute function f_upd2();
create or replace function f_del() returns trigger language plpgsql as $$ begin return null; end $$;`},
	}
	got, bodies := expectationsFrom(ms)
	want := []ExpectedTrigger{
		{Table: "a", Name: "a_no_delete", Function: "f_del"},
		{Table: "a", Name: "keep_me", Function: "f_upd2"},
		{Table: "b", Name: "b_no_delete", Function: "f_del"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("triggers = %+v\nwant %+v", got, want)
	}
	if bodies["f_del"] != " begin return null; end " {
		t.Errorf("f_del body = %q, want the later definition", bodies["f_del"])
	}
}
