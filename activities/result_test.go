package activities

import (
	"reflect"
	"testing"
	"time"

	"svc/drivers"
)

// TestJobOutputCarriesEveryField: every field a driver reports reaches
// traces.BuildResult, so a field added to drivers.Result and not to
// traces.JobOutput (or not copied) fails here rather than vanish from
// results.
func TestJobOutputCarriesEveryField(t *testing.T) {
	var res drivers.Result
	rv := reflect.ValueOf(&res).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.String:
			f.SetString(rv.Type().Field(i).Name)
		case reflect.Slice:
			f.SetBytes([]byte(rv.Type().Field(i).Name))
		default:
			t.Fatalf("drivers.Result.%s has kind %s, which this test does not fill", rv.Type().Field(i).Name, f.Kind())
		}
	}
	if res.Duration == 0 {
		res.Duration = time.Second
	}
	out := reflect.ValueOf(jobOutput(res))
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		got := out.FieldByName(name)
		if !got.IsValid() {
			t.Errorf("traces.JobOutput has no field %s of drivers.Result", name)
			continue
		}
		if !reflect.DeepEqual(got.Interface(), rv.Field(i).Interface()) {
			t.Errorf("jobOutput: %s = %v, want %v", name, got.Interface(), rv.Field(i).Interface())
		}
	}
}
