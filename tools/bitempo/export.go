package main

import "github.com/spf13/cobra"

func (a *app) exportCmd() *cobra.Command { return &cobra.Command{Use: "export", Hidden: true} }
func (a *app) importCmd() *cobra.Command { return &cobra.Command{Use: "import", Hidden: true} }
