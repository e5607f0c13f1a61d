package testlong

import "testing"

func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env  string
		want bool
	}{{"", false}, {"0", false}, {"no", false}, {"1", true}, {"true", true}} {
		t.Setenv(Env, c.env)
		if got := Enabled(); got != c.want {
			t.Errorf("%s=%q: Enabled() = %v, want %v", Env, c.env, got, c.want)
		}
		if got, want := Size(100, 10), map[bool]int{true: 100, false: 10}[c.want]; got != want {
			t.Errorf("%s=%q: Size(100, 10) = %d, want %d", Env, c.env, got, want)
		}
	}
}

func TestSkip(t *testing.T) {
	t.Setenv(Env, "1")
	ran := false
	t.Run("long", func(t *testing.T) { Skip(t, "test"); ran = true })
	if !ran {
		t.Errorf("Skip skipped with %s=1", Env)
	}
	t.Setenv(Env, "")
	ran = false
	t.Run("quick", func(t *testing.T) { Skip(t, "test"); ran = true })
	if ran {
		t.Errorf("Skip did not skip without %s", Env)
	}
}
