package main

import "os"

// Main runs bankdoor with the process's arguments and standard streams,
// as main does, and returns its exit status. The test binary runs it when
// a testscript script calls bankdoor (script_test.go).
func Main() int {
	return run(&env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
}
