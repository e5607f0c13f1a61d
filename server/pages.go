package server

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/store"
)

// keyArgs prints a key's components as the tool takes them (bytes in hex).
func keyArgs(k store.Key) []string {
	out := make([]string, len(k))
	for i, c := range k {
		if b, ok := c.([]byte); ok {
			out[i] = hex.EncodeToString(b)
		} else {
			out[i] = fmt.Sprint(c)
		}
	}
	return out
}

// keyPath is a key's part of a page's path: its components, path-escaped.
func keyPath(k store.Key) string {
	parts := keyArgs(k)
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

var pages = template.Must(template.New("layout").Parse(`{{define "top"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #1b1b1b; }
a { color: #1f4e8c; } table { border-collapse: collapse; } td, th { padding: 2px 10px; text-align: left; }
#answer { margin-top: 1em; padding: 0.6em; background: #f2f5f9; min-height: 1.4em; white-space: pre-wrap; font-family: monospace; }
svg.bitemporal { border: 1px solid #ddd; cursor: crosshair; }
</style></head><body>
<p><a href="{{.Base}}/">tables</a></p>{{end}}
{{define "index"}}{{template "top" .}}
<h1>{{.Name}}</h1>
<table><tr><th>table</th><th>kind</th><th>axis</th><th>key</th></tr>
{{range .Tables}}<tr><td><a href="{{$.Base}}/table/{{.Name}}">{{.Name}}</a></td><td>{{.Kind}}</td><td>{{.Axis}}</td><td>{{range $i, $c := .Key}}{{if $i}}, {{end}}{{$c.Name}} ({{$c.Type}}){{end}}</td></tr>
{{end}}</table></body></html>{{end}}
{{define "table"}}{{template "top" .}}
<h1>{{.Table.Name}}</h1>
<p>{{.Table.Kind}} table, {{.Table.Axis}} axis; attributes: {{range $i, $a := .Table.Attrs}}{{if $i}}, {{end}}{{$a}}{{end}}</p>
<ul class="keys">{{range .Keys}}<li><a href="{{$.Base}}/table/{{$.Table.Name}}/key/{{.Path}}">{{.Label}}</a></li>
{{end}}</ul>
{{if .Next}}<p><a class="next" href="{{.Next}}">next page</a></p>{{end}}
</body></html>{{end}}
{{define "key"}}{{template "top" .}}
<h1><a href="{{.Base}}/table/{{.Table}}">{{.Table}}</a> {{.Label}}</h1>
<p>Valid time runs across, transaction time up; each rectangle is a record. Click a point to read the key there (get at that valid time, as known at that transaction time), or pick one:</p>
<form id="asof">valid <input id="valid" name="valid" value="now" size="28"> tx <input id="tx" name="tx" value="latest" size="28"> <button type="submit">get</button></form>
<div>{{.SVG}}</div>
<div id="answer" data-state="empty"></div>
<script>
(function () {
  const api = {{.API}}, keys = {{.Keys}};
  const svg = document.querySelector("svg.bitemporal");
  const answer = document.getElementById("answer");
  const vc = JSON.parse(svg.dataset.validCuts || "[]"), tc = JSON.parse(svg.dataset.txCuts || "[]");
  function cut(cs, v) {
    for (const c of cs) {
      const lo = Math.min(c.from, c.to), hi = Math.max(c.from, c.to);
      if (v >= lo && v < hi) return c;
    }
    return null;
  }
  async function ask(valid, tx) {
    const q = new URLSearchParams();
    keys.forEach(function (k) { q.append("key", k); });
    q.set("valid", valid);
    q.set("tx", tx);
    answer.dataset.state = "asking";
    try {
      const r = await fetch(api + "?" + q.toString(), {credentials: "same-origin"});
      const b = await r.json();
      const at = "valid " + valid + ", tx " + tx + ": ";
      if (r.ok) {
        const attrs = Object.keys(b.attrs).sort().map(function (k) { return k + "=" + b.attrs[k]; }).join(" ");
        answer.textContent = at + "sk " + b.sk + " [" + (b.valid_from || "-inf") + ", " + (b.valid_to || "+inf") + ") " + attrs;
        answer.dataset.sk = b.sk;
        answer.dataset.state = "found";
      } else {
        answer.textContent = at + b.code + ": " + b.error;
        answer.dataset.sk = "";
        answer.dataset.state = "miss";
      }
    } catch (e) {
      answer.textContent = "error: " + e;
      answer.dataset.state = "error";
    }
  }
  svg.addEventListener("click", function (ev) {
    const pt = svg.createSVGPoint();
    pt.x = ev.clientX; pt.y = ev.clientY;
    const p = pt.matrixTransform(svg.getScreenCTM().inverse());
    const v = cut(vc, p.x), t = cut(tc, p.y);
    if (!v || !t) return;
    let m = document.getElementById("pick");
    if (!m) {
      m = document.createElementNS("http://www.w3.org/2000/svg", "circle");
      m.id = "pick"; m.setAttribute("r", "5"); m.setAttribute("fill", "#d0342c");
      svg.appendChild(m);
    }
    m.setAttribute("cx", p.x); m.setAttribute("cy", p.y);
    document.getElementById("valid").value = v.q;
    document.getElementById("tx").value = t.q;
    ask(v.q, t.q);
  });
  document.getElementById("asof").addEventListener("submit", function (ev) {
    ev.preventDefault();
    ask(document.getElementById("valid").value, document.getElementById("tx").value);
  });
})();
</script>
</body></html>{{end}}`))

func (h *handler) render(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(b.Bytes())
}

// GET /: the store's tables.
func (h *handler) indexPage(w http.ResponseWriter, r *http.Request) {
	var tables []tableJSON
	for _, t := range h.db.Tables() {
		tables = append(tables, h.tableJSON(t))
	}
	h.render(w, "index", map[string]any{"Title": "bitempo " + h.opts.Name, "Base": h.opts.BasePath, "Name": h.opts.Name, "Tables": tables})
}

// GET /table/{table}?after=K...: a page of the table's keys.
func (h *handler) tablePage(w http.ResponseWriter, r *http.Request) {
	t, err := h.db.Table(r.PathValue("table"))
	if err != nil {
		writeErr(w, err)
		return
	}
	keys, next, err := h.keysAfter(t, r.URL.Query()["after"], 100)
	if err != nil {
		writeErr(w, err)
		return
	}
	type link struct{ Path, Label string }
	var links []link
	for _, k := range keys {
		links = append(links, link{keyPath(k), strings.Join(keyArgs(k), " ")})
	}
	nextURL := ""
	if next != nil {
		q := url.Values{"after": keyArgs(next)}
		nextURL = h.opts.BasePath + "/table/" + url.PathEscape(t.Name) + "?" + q.Encode()
	}
	h.render(w, "table", map[string]any{"Title": t.Name, "Base": h.opts.BasePath, "Table": h.tableJSON(t), "Keys": links, "Next": nextURL})
}

// pageKey reads the table and the key of a key page's path.
func (h *handler) pageKey(r *http.Request) (*store.Table, store.Key, error) {
	t, err := h.db.Table(r.PathValue("table"))
	if err != nil {
		return nil, nil, err
	}
	parts := strings.Split(r.PathValue("key"), "/")
	key, err := cli.ParseKey(t, parts)
	if err != nil {
		return nil, nil, &badRequest{"bitempo: key: " + err.Error()}
	}
	return t, key, nil
}

// GET /table/{table}/key/{key...}: the key's diagram and point reads.
func (h *handler) keyPage(w http.ResponseWriter, r *http.Request) {
	t, key, svg, err := h.keyDiagram(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	h.render(w, "key", map[string]any{
		"Title": t.Name + " " + key.String(), "Base": h.opts.BasePath, "Table": t.Name, "Label": strings.Join(keyArgs(key), " "),
		"SVG": template.HTML(svg.String()), "API": h.opts.BasePath + "/v1/tables/" + url.PathEscape(t.Name) + "/get", "Keys": keyArgs(key),
	})
}

// GET /table/{table}/svg/{key...}: the key's diagram alone.
func (h *handler) keySVG(w http.ResponseWriter, r *http.Request) {
	_, _, svg, err := h.keyDiagram(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = w.Write(svg.Bytes())
}

// keyDiagram draws the diagram of the key a page's path names.
func (h *handler) keyDiagram(r *http.Request) (*store.Table, store.Key, *bytes.Buffer, error) {
	t, key, err := h.pageKey(r)
	if err != nil {
		return nil, nil, nil, err
	}
	var svg bytes.Buffer
	if err := cli.KeyDiagram(&svg, h.db, t, key); err != nil {
		return nil, nil, nil, err
	}
	return t, key, &svg, nil
}
