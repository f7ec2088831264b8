// Package all links every provider connector into a binary, so that
// connector.New finds each of them:
//
//	import _ "github.com/sluicehq/sluice/connector/all"
package all

import (
	// Each registers itself with connector.Register.
	_ "github.com/sluicehq/sluice/connector/datago"
	_ "github.com/sluicehq/sluice/connector/ecos"
	_ "github.com/sluicehq/sluice/connector/fred"
	_ "github.com/sluicehq/sluice/connector/kis"
	_ "github.com/sluicehq/sluice/connector/upbit"
)
