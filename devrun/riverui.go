package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// riverUIUser is the River UI user name the services default to (RIVERUI_USER); the password is
// the API token.
const riverUIUser = "drover"

// showRiverUI prints where each service serves River UI and how to log in, after checking that
// each answers a logged-in request.
func showRiverUI(ctx context.Context, opts options, f *fleet, p *printer) error {
	p.step("River UI of each service: log in as user %q with the API token %q as the password", riverUIUser, opts.token)
	var errs []error
	for _, s := range f.services {
		url := s.url + "/riverui/"
		if err := riverUIAnswers(ctx, s.url+"/riverui/api/queues", opts.token); err != nil {
			p.fail("%-16s %s   %v", s.name, url, err)
			errs = append(errs, fmt.Errorf("%s river ui: %w", s.name, err))
			continue
		}
		p.ok("%-16s %s", s.name, url)
	}
	return errors.Join(errs...)
}

// riverUIAnswers checks that url refuses a request without credentials and answers 200 to one
// logged in with token.
func riverUIAnswers(ctx context.Context, url, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, login := range []bool{false, true} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		want := http.StatusUnauthorized
		if login {
			req.SetBasicAuth(riverUIUser, token)
			want = http.StatusOK
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("GET %s (logged in: %t) answered %d, want %d", url, login, resp.StatusCode, want)
		}
	}
	return nil
}
