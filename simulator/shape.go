package simulator

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// ShapeSpec describes one answer shape a provider speaks (Fault.Shape):
// what validation allows and whether the shape spends a daily quota.
type ShapeSpec struct {
	// Name is the shape's name in Fault.Shape, e.g. "gateway-json".
	Name string
	// Doc says in one line what the shape answers.
	Doc string
	// Codes are the codes Fault.Code may carry ("" is always allowed: the
	// shape's default); nil means the shape takes no code, and a single
	// "*" means any code of one to four digits.
	Codes []string
	// TakesMsgCode and TakesMessage say whether Fault.MsgCode and
	// Fault.Message mean something to the shape.
	TakesMsgCode, TakesMessage bool
	// SpendsQuota reports whether an answer with this code spends the
	// daily quota of the request's scopes (data.go.kr code 22): the
	// simulator then counts the call against those scopes and answers
	// "quota spent" to every later call until local midnight, fault or
	// no fault. nil: never.
	SpendsQuota func(code string) bool
}

// ShapeCall is one request a shape fault answers.
type ShapeCall struct {
	// Fault is the fault that chose the shape (its Code, MsgCode,
	// Message and Status).
	Fault Fault
	// Fraction is the RejectAtFraction of the matching faults, for a
	// shape that runs the provider's own handling (KIS token-expired).
	Fraction float64
}

// Shaper is a Provider that speaks answer shapes of its own, selectable
// as faults (Fault.Shape).
type Shaper interface {
	// Shapes lists the shapes the provider speaks.
	Shapes() []ShapeSpec
	// ShapeApplies reports whether a shape answers a routed request (a
	// token shape does not answer a data call); a request it does not
	// apply to is served as usual.
	ShapeApplies(shape string, r *http.Request, rt Route) bool
	// ShapeReply answers a request the shape applies to.
	ShapeReply(shape string, r *http.Request, rt Route, c ShapeCall) *Reply
}

// The shapes every provider speaks.
const (
	ShapeHTMLMaintenance = "html-maintenance"
	ShapeEmptyBody       = "empty-body"
)

var commonShapes = []ShapeSpec{
	{Name: ShapeHTMLMaintenance, Doc: "an HTML maintenance page (text/html;charset=UTF-8), HTTP 200 unless status says otherwise"},
	{Name: ShapeEmptyBody, Doc: "an empty body with Content-Type application/json;charset=UTF-8 and Content-Length 0, HTTP 200 unless status says otherwise"},
}

// MaintenancePage is the body of the html-maintenance shape: a portal's
// notice page in place of the API's answer (Korean portals answer their
// scheduled maintenance this way, in HTTP 200).
const MaintenancePage = `<!DOCTYPE html>
<html lang="ko">
<head>
<meta charset="UTF-8">
<title>시스템 점검 안내</title>
</head>
<body>
<div class="notice">
<h1>시스템 점검 중입니다</h1>
<p>보다 안정적인 서비스를 위하여 시스템 점검을 실시하고 있습니다.</p>
<p>점검 시간 동안 서비스 이용이 일시 중단되오니 양해 부탁드립니다.</p>
</div>
</body>
</html>
`

// commonReply answers a shape every provider speaks.
func commonReply(shape string, status int) *Reply {
	switch shape {
	case ShapeHTMLMaintenance:
		return NewReply(orStatus(status, http.StatusOK), "text/html;charset=UTF-8", []byte(MaintenancePage), "fault-shape")
	case ShapeEmptyBody:
		return NewReply(orStatus(status, http.StatusOK), "application/json;charset=UTF-8", []byte{}, "fault-shape")
	}
	return nil
}

func orStatus(status, def int) int {
	if status == 0 {
		return def
	}
	return status
}

// OrStatus returns status, or def when status is 0: a shape's default
// HTTP status.
func OrStatus(status, def int) int { return orStatus(status, def) }

// shapesOf returns the shapes a connector speaks: its own and the common
// ones.
func (s *Simulator) shapesOf(conn string) []ShapeSpec {
	out := append([]ShapeSpec(nil), commonShapes...)
	if sh, ok := s.Provider(conn).(Shaper); ok {
		out = append(out, sh.Shapes()...)
	}
	return out
}

// shapeSpec finds a shape of a connector.
func (s *Simulator) shapeSpec(conn, name string) (ShapeSpec, bool) {
	for _, sp := range s.shapesOf(conn) {
		if sp.Name == name {
			return sp, true
		}
	}
	return ShapeSpec{}, false
}

// checkShape validates a fault's shape against its provider's shapes.
func (s *Simulator) checkShape(f Fault) error {
	if f.Shape == "" {
		return nil
	}
	var conns []string
	if f.Provider != "" {
		conns = []string{s.byID[f.Provider].conn}
	} else {
		// A fault for every provider may only name a shape every
		// provider speaks.
		for _, c := range commonShapes {
			if c.Name == f.Shape {
				return checkShapeValues(f, c)
			}
		}
		names := make([]string, 0, len(commonShapes))
		for _, c := range commonShapes {
			names = append(names, c.Name)
		}
		return fmt.Errorf("fault %s: shape %q is not one every provider speaks (%s); name a provider for a provider's own shape",
			f.scope(), f.Shape, strings.Join(names, ", "))
	}
	for _, conn := range conns {
		sp, ok := s.shapeSpec(conn, f.Shape)
		if !ok {
			var names []string
			for _, c := range s.shapesOf(conn) {
				names = append(names, c.Name)
			}
			return fmt.Errorf("fault %s: shape %q is not one %s speaks (known: %s)", f.scope(), f.Shape, f.Provider, strings.Join(names, ", "))
		}
		if err := checkShapeValues(f, sp); err != nil {
			return err
		}
	}
	return nil
}

func checkShapeValues(f Fault, sp ShapeSpec) error {
	if f.Code != "" {
		switch {
		case sp.Codes == nil:
			return fmt.Errorf("fault %s: shape %s takes no code, but code is %q", f.scope(), sp.Name, f.Code)
		case len(sp.Codes) == 1 && sp.Codes[0] == "*":
			if len(f.Code) > 4 || strings.Trim(f.Code, "0123456789") != "" {
				return fmt.Errorf("fault %s: code %q of shape %s is not one to four digits", f.scope(), f.Code, sp.Name)
			}
		case !slices.Contains(sp.Codes, f.Code):
			return fmt.Errorf("fault %s: code %q is not one shape %s knows (known: %s)", f.scope(), f.Code, sp.Name, strings.Join(sp.Codes, ", "))
		}
	}
	if f.MsgCode != "" && !sp.TakesMsgCode {
		return fmt.Errorf("fault %s: shape %s takes no msg_cd, but msg_cd is %q", f.scope(), sp.Name, f.MsgCode)
	}
	if f.Message != "" && !sp.TakesMessage {
		return fmt.Errorf("fault %s: shape %s takes no message, but message is %q", f.scope(), sp.Name, f.Message)
	}
	return nil
}

// Shapes lists the shapes the simulator's provider of a connector speaks,
// the common ones first (for help and docs).
func (s *Simulator) Shapes(connector string) []ShapeSpec { return s.shapesOf(connector) }
