package etcd

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bitempo/bitempo/store"
)

// ParseURL reads a store's address in the tool's form,
//
//	etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?max-txn-ops=N&max-request-bytes=N&timeout=DURATION&page-size=N]
//
// into a Config: the members' client endpoints, the key prefix "/PREFIX",
// the cluster's transaction limits and the request timeout.
func ParseURL(s string) (Config, error) {
	rest, ok := strings.CutPrefix(s, "etcd://")
	if !ok {
		return Config{}, fmt.Errorf("%w: %q: want etcd://HOST:PORT[,HOST:PORT...]/PREFIX", ErrConfig, s)
	}
	rest, query, _ := strings.Cut(rest, "?")
	hosts, prefix, ok := strings.Cut(rest, "/")
	if !ok || hosts == "" || prefix == "" {
		return Config{}, fmt.Errorf("%w: %q: want etcd://HOST:PORT[,HOST:PORT...]/PREFIX", ErrConfig, s)
	}
	cfg := Config{Prefix: "/" + strings.TrimSuffix(prefix, "/")}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" || !strings.Contains(h, ":") {
			return Config{}, fmt.Errorf("%w: %q: member %q is not HOST:PORT", ErrConfig, s, h)
		}
		cfg.Endpoints = append(cfg.Endpoints, "http://"+h)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %q: %v", ErrConfig, s, err)
	}
	for k, vs := range q {
		v := vs[len(vs)-1]
		var err error
		switch k {
		case "max-txn-ops":
			cfg.MaxTxnOps, err = strconv.Atoi(v)
		case "max-request-bytes":
			cfg.MaxRequestBytes, err = strconv.Atoi(v)
		case "page-size":
			cfg.PageSize, err = strconv.Atoi(v)
		case "timeout":
			cfg.RequestTimeout, err = time.ParseDuration(v)
		default:
			err = fmt.Errorf("unknown parameter")
		}
		if err != nil {
			return Config{}, fmt.Errorf("%w: %q: %s=%s: %v", ErrConfig, s, k, v, err)
		}
	}
	return cfg, nil
}

// OpenURL opens the store at an etcd:// address (ParseURL); it is the tool's
// opener of --db etcd://... (etcd/cmd/bitempo).
func OpenURL(ctx context.Context, s string, opts store.Options) (*store.DB, error) {
	cfg, err := ParseURL(s)
	if err != nil {
		return nil, err
	}
	return Open(ctx, cfg, opts)
}
