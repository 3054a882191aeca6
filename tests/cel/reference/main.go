// cel-reference evaluates DRA device selectors with the reference implementation, Kubernetes'
// k8s.io/dynamic-resource-allocation/cel (cel-go with the DRA environment), for Tessel's
// differential test (tests/cel/differential.py). One JSON case per input line:
//
//	{"expr": "device.driver == 'a'", "device": {"driver": "a", "attributes": {"a/x": {"int": 1}},
//	 "capacity": {"mem": "1Gi"}, "allowMultipleAllocations": false}}
//
// prints one line per case: true, false, error or compile_error, a tab, and the detail.
//
//	echo '{"expr":"true","device":{"driver":"d"}}' | cel-reference
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type attribute struct {
	Int     *int64  `json:"int"`
	Bool    *bool   `json:"bool"`
	String  *string `json:"string"`
	Version *string `json:"version"`
}

type device struct {
	Driver                   string               `json:"driver"`
	Attributes               map[string]attribute `json:"attributes"`
	Capacity                 map[string]string    `json:"capacity"`
	AllowMultipleAllocations bool                 `json:"allowMultipleAllocations"`
}

type testCase struct {
	Expr   string `json:"expr"`
	Device device `json:"device"`
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func main() {
	compiler := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})
	compiled := map[string]dracel.CompilationResult{}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		var c testCase
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintf(os.Stderr, "cel-reference: bad input line: %v\n", err)
			os.Exit(2)
		}
		result, ok := compiled[c.Expr]
		if !ok {
			result = compiler.CompileCELExpression(c.Expr, dracel.Options{DisableCostEstimation: true})
			compiled[c.Expr] = result
		}
		if result.Error != nil {
			fmt.Fprintf(out, "compile_error\t%s\n", oneLine(result.Error.Error()))
			continue
		}
		dev := dracel.Device{
			Driver:                   c.Device.Driver,
			AllowMultipleAllocations: &c.Device.AllowMultipleAllocations,
			Attributes:               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
			Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{},
		}
		for name, a := range c.Device.Attributes {
			dev.Attributes[resourceapi.QualifiedName(name)] = resourceapi.DeviceAttribute{
				IntValue: a.Int, BoolValue: a.Bool, StringValue: a.String, VersionValue: a.Version,
			}
		}
		badCapacity := ""
		for name, text := range c.Device.Capacity {
			q, err := resource.ParseQuantity(text)
			if err != nil {
				badCapacity = fmt.Sprintf("capacity %s: %v", name, err)
				break
			}
			dev.Capacity[resourceapi.QualifiedName(name)] = resourceapi.DeviceCapacity{Value: q}
		}
		if badCapacity != "" {
			fmt.Fprintf(out, "error\t%s\n", badCapacity)
			continue
		}
		matches, _, err := result.DeviceMatches(context.Background(), dev)
		switch {
		case err != nil:
			fmt.Fprintf(out, "error\t%s\n", oneLine(err.Error()))
		default:
			fmt.Fprintf(out, "%t\t\n", matches)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "cel-reference: %v\n", err)
		os.Exit(2)
	}
}
