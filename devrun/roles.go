package main

import (
	"net/url"

	"drover.dev/migrations"
)

// devRolePassword is the password make run gives every service's role when the database it was
// given takes passwords (its URL carries one); with trust authentication (devdb.sh's private
// cluster) the roles log in without one and devrun leaves their passwords alone.
const devRolePassword = "drover-dev-db"

// roleURL returns databaseURL logged in as unit's own role (drover_scorer, ...), as a deployment
// runs each service: migrate up created the role and granted it its rights.
func roleURL(databaseURL, unit string) (string, error) {
	u, err := migrations.ParseUnit(unit)
	if err != nil {
		return "", err
	}
	parsed, err := url.Parse(databaseURL)
	if err != nil {
		return "", err
	}
	if _, hasPassword := parsed.User.Password(); hasPassword {
		parsed.User = url.UserPassword(u.Role(), devRolePassword)
	} else {
		parsed.User = url.User(u.Role())
	}
	return parsed.String(), nil
}

// rolePasswords is the environment migrate up gets to set the roles' passwords, when the database
// takes passwords (see devRolePassword).
func rolePasswords(databaseURL string) map[string]string {
	parsed, err := url.Parse(databaseURL)
	if err != nil {
		return nil
	}
	if _, hasPassword := parsed.User.Password(); !hasPassword {
		return nil
	}
	out := map[string]string{}
	for _, u := range migrations.Units {
		out[u.PasswordEnv()] = devRolePassword
	}
	return out
}

// roleName is the role unit runs as, for messages.
func roleName(unit string) string {
	u, err := migrations.ParseUnit(unit)
	if err != nil {
		return "?"
	}
	return u.Role()
}
