package browsertest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bitempo/bitempo/server"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// chromium finds the browser, skipping the test when it is absent outside CI.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on the PATH (CI installs it: apt-get install -y chromium)")
	}
	t.Skip("no chromium on the PATH: install it (apt-get install -y chromium) to run the browser test")
	return ""
}

// point is a position in the page, in CSS pixels.
type point struct{ X, Y float64 }

func day(s string) int64 {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d.UnixMicro()
}

// TestKeyPageClick serves a customer who moved from Oslo to Bergen on
// 2024-03-11, opens the key's page, and clicks two points of its diagram:
// inside the Bergen record (Bergen, sk 2), and inside the Oslo record as
// first recorded, after the move in valid time but before it was recorded in
// transaction time (Oslo, sk 1: the state as known then).
func TestKeyPageClick(t *testing.T) {
	browser := chromium(t)
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisDate}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ city, at string }{{"Oslo", "2024-01-01"}, {"Bergen", "2024-03-11"}} {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"city": c.city}, day(c.at))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(server.Handler(db, server.Options{}))
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1200, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/table/customers/key/c1"), chromedp.WaitVisible(chromedp.CSS("svg.bitemporal"))); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, record string // the record group, by its label
		rightEnd     bool   // click near the rectangle's right end instead of its centre
		want, sk     string
	}{
		{"inside the Bergen record", "city=Bergen", false, "city=Bergen", "2"},
		{"Oslo as first recorded, after the move's valid time", "city=Oslo", true, "city=Oslo", "1"},
	} {
		// The point in the page's coordinates: the record's rectangle, through
		// the SVG's transformation to the screen.
		js := fmt.Sprintf(`(function () {
			const svg = document.querySelector("svg.bitemporal");
			const g = [...svg.querySelectorAll("g.record")].find(g => g.querySelector("text.label").textContent === %q);
			const r = g.querySelector("rect");
			const x = parseFloat(r.getAttribute("x")), w = parseFloat(r.getAttribute("width"));
			const p = svg.createSVGPoint();
			p.x = %v ? x + w - 6 : x + w / 2;
			p.y = parseFloat(r.getAttribute("y")) + parseFloat(r.getAttribute("height")) / 2;
			const s = p.matrixTransform(svg.getScreenCTM());
			return {X: s.x, Y: s.y};
		})()`, c.record, c.rightEnd)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`document.getElementById("answer").dataset.state = "empty"`)); err != nil {
			t.Fatal(err)
		}
		pt, err := chromedp.Run(ctx, chromedp.Evaluate[point](js))
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		err = chromedp.Do(ctx, chromedp.MouseClickXY(pt.X, pt.Y), chromedp.WaitVisible(chromedp.CSS(`#answer[data-state="found"]`)))
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#answer")))
		if err != nil {
			t.Fatal(err)
		}
		sk, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#answer"), "data-sk"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, c.want) || sk.Value != c.sk {
			t.Errorf("%s: the page answers %q (sk %s), want %s sk %s", c.what, text, sk.Value, c.want, c.sk)
		}
		t.Logf("%s: %s", c.what, text)
	}
}
