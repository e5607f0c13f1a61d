// Package fuzz holds bitempo's fuzz targets and the reference model they compare against.
package fuzz
