package etcd_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bitempo/bitempo/etcd"
)

func TestParseURL(t *testing.T) {
	cfg, err := etcd.ParseURL("etcd://a:1,b:2/stores/prices?max-txn-ops=4096&max-request-bytes=8388608&timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Endpoints, []string{"http://a:1", "http://b:2"}) || cfg.Prefix != "/stores/prices" ||
		cfg.MaxTxnOps != 4096 || cfg.MaxRequestBytes != 8388608 || cfg.RequestTimeout != 3*time.Second {
		t.Fatalf("%+v", cfg)
	}
	for _, bad := range []string{"etcd://a:1", "etcd:///p", "http://a:1/p", "etcd://a/p", "etcd://a:1/p?max-txn-ops=x", "etcd://a:1/p?color=red"} {
		if _, err := etcd.ParseURL(bad); !errors.Is(err, etcd.ErrConfig) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
