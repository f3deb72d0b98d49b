//go:build !unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// forwardedSignals: only an interrupt can be caught here.
var forwardedSignals = []os.Signal{os.Interrupt}

// Placeholders for the signals that pause and resume a demo holder.
var sigStop, sigCont syscall.Signal

// killProcess cannot signal processes without Unix signals.
func killProcess(int, syscall.Signal) error { return errors.ErrUnsupported }

// inTerminalForeground: CMD always shares interlock's console.
func inTerminalForeground() bool { return true }

// childAttr has nothing to set.
func childAttr(bool) *syscall.SysProcAttr { return nil }

// holderAttr has nothing to set.
func holderAttr() *syscall.SysProcAttr { return nil }
