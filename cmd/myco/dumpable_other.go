//go:build !linux

package main

func undumpable() {}
