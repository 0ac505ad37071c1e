package api_test

import (
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
