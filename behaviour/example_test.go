package behaviour_test

import (
	"fmt"

	"github.com/toolroute/toolroute/behaviour"
)

func ExampleBehaviour_Annotations() {
	for _, b := range []behaviour.Behaviour{behaviour.ReadOnly, behaviour.Additive, behaviour.Destructive} {
		a := b.Annotations("", true, false)
		fmt.Printf("%-11s readOnly=%-5v destructive=%-5v idempotent=%-5v openWorld=%v\n",
			b, a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint)
	}
	// Output:
	// read-only   readOnly=true  destructive=false idempotent=true  openWorld=false
	// additive    readOnly=false destructive=false idempotent=true  openWorld=false
	// destructive readOnly=false destructive=true  idempotent=true  openWorld=false
}

func ExampleParse() {
	b, err := behaviour.Parse("destructive")
	fmt.Println(b, err)
	_, err = behaviour.Parse("unset")
	fmt.Println(err)
	// Output:
	// destructive <nil>
	// behaviour: unknown behaviour "unset" (want read-only, additive or destructive)
}
