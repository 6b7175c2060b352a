package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeListsEveryExitCode holds the top README's exit codes to the ones --help shows, so a
// script written from either checks the same codes (the README once left out 1).
func TestReadmeListsEveryExitCode(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, list, found := strings.Cut(string(readme), "\nExit codes: ")
	require.True(t, found, "README.md has an \"Exit codes: \" paragraph")
	list, _, _ = strings.Cut(list, "\n\n")
	list = strings.Join(strings.Fields(list), " ") // the paragraph's lines joined

	codes := regexp.MustCompile(`(?m)^  (\d+) `).FindAllStringSubmatch(exitCodes, -1)
	require.NotEmpty(t, codes)
	for _, c := range codes {
		require.Regexp(t, `(^|, )`+c[1]+` `, list, "README.md's exit codes leave out %s, which drover --help lists", c[1])
	}
}
