package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestWrongMethodIs405AndUnknownRoute404 requires a route asked with a method
// it does not take to answer 405 naming the methods it takes, and a path no
// route takes 404, both as JSON errors.
func TestWrongMethodIs405AndUnknownRoute404(t *testing.T) {
	srv, _ := customers(t, Options{})
	for _, c := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{http.MethodPost, "/v1/tables", http.StatusMethodNotAllowed, "ErrMethodNotAllowed", "GET"},
		{http.MethodDelete, "/v1/tables/customers/get", http.StatusMethodNotAllowed, "ErrMethodNotAllowed", "GET"},
		{http.MethodGet, "/v1/run", http.StatusMethodNotAllowed, "ErrMethodNotAllowed", "POST"},
		{http.MethodGet, "/v1/nothing", http.StatusNotFound, "ErrNoRoute", ""},
		{http.MethodPost, "/v1/nothing", http.StatusNotFound, "ErrNoRoute", ""},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(""))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body errorBody
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != c.status || body.Code != c.code || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d %+v (Allow %q, %v), want %d %s (Allow %q)", c.method, c.path, resp.StatusCode, body, resp.Header.Get("Allow"), err, c.status, c.code, c.allow)
		}
	}
}
