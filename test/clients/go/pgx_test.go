// pgx (Debian's golang-github-jackc-pgx-v4-dev, in GOPATH mode): the recipe
// of doc/clients.md. Where Debian packages pgx v5 (trixie, forky),
// test/clients/run.sh runs a copy with the import and pgxMajor changed to v5.
package clients

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v4"
)

const pgxMajor = 4

func check(err error) {
	if err != nil {
		panic(err)
	}
}

// guide: begin pgx-json
type Customer struct {
	ID   int64  `json:"id,string"` // a JSON string: exact in JavaScript too
	Name string `json:"name"`
}
// guide: end

type customerAsNumber struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func TestRecipe(t *testing.T) {
	ctx := context.Background()
	schema, err := os.ReadFile(filepath.Join(os.Getenv("SNOWFLAKE_CHECKOUT"), "test/clients/schema.sql"))
	check(err)
	setup, err := pgx.Connect(ctx, "")
	check(err)
	_, err = setup.Exec(ctx, string(schema))
	check(err)
	setup.Close(ctx)

	// guide: begin pgx
	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL")) // "": libpq's PG* variables
	check(err)
	defer conn.Close(ctx)

	var customerID int64
	check(conn.QueryRow(ctx,
		"INSERT INTO customers (name) VALUES ($1) RETURNING id", "Ada").Scan(&customerID))
	_, err = conn.Exec(ctx,
		"INSERT INTO orders (customer_id, item) VALUES ($1, $2)", customerID, "book")
	check(err)

	// Bulk: one statement, every ID back
	rows, err := conn.Query(ctx,
		"INSERT INTO customers (name) SELECT unnest($1::text[]) RETURNING id",
		[]string{"Grace", "Edsger", "Barbara"})
	check(err)
	var bulkIDs []int64
	for rows.Next() {
		var id int64
		check(rows.Scan(&id))
		bulkIDs = append(bulkIDs, id)
	}
	check(rows.Err())

	var datacenterID, workerID int
	check(conn.QueryRow(ctx,
		"SELECT datacenter_id, worker_id FROM snowflake_decode($1)", customerID).Scan(&datacenterID, &workerID))
	// guide: end

	held := func(ids []int64) []string {
		texts := make([]string, len(ids))
		for i, id := range ids {
			texts[i] = strconv.FormatInt(id, 10)
		}
		var found []string
		rows, err := conn.Query(ctx, "SELECT id::text FROM customers WHERE id::text = ANY($1) ORDER BY 1", texts)
		check(err)
		for rows.Next() {
			var text string
			check(rows.Scan(&text))
			found = append(found, text)
		}
		sort.Strings(texts)
		if len(found) != len(texts) {
			t.Errorf("customers holds %v of %v", found, texts)
			return found
		}
		for i := range texts {
			if found[i] != texts[i] {
				t.Errorf("customers holds %v, not %v", found, texts)
			}
		}
		return found
	}
	exact := held([]int64{customerID})
	if len(bulkIDs) != 3 || bulkIDs[0] == bulkIDs[1] || bulkIDs[1] == bulkIDs[2] {
		t.Errorf("bulk IDs: %v", bulkIDs)
	}
	held(bulkIDs)
	var item string
	check(conn.QueryRow(ctx, "SELECT item FROM orders WHERE customer_id = $1", customerID).Scan(&item))
	if item != "book" {
		t.Errorf("the order of %d: %q", customerID, item)
	}
	if strconv.Itoa(datacenterID) != os.Getenv("SNOWFLAKE_DATACENTER_ID") || strconv.Itoa(workerID) != os.Getenv("SNOWFLAKE_WORKER_ID") {
		t.Errorf("%d decodes to datacenter %d, worker %d", customerID, datacenterID, workerID)
	}
	var recent bool
	check(conn.QueryRow(ctx, "SELECT abs(extract(epoch FROM now() - ts)) < 300 FROM snowflake_decode($1)", customerID).Scan(&recent))
	if !recent {
		t.Errorf("%d does not decode to now", customerID)
	}

	// How Go writes the ID in JSON, for the layer's JSON test in node.
	asNumber, err := json.Marshal(customerAsNumber{customerID, "Ada"})
	check(err)
	asString, err := json.Marshal(Customer{customerID, "Ada"})
	check(err)
	forms, err := json.Marshal(map[string]interface{}{
		"exact": exact[0],
		"forms": map[string]string{"default": string(asNumber), "safe": string(asString)},
	})
	check(err)
	jsonDir := filepath.Join(os.Getenv("SNOWFLAKE_CHECKOUT"), "build/clients/json")
	check(os.MkdirAll(jsonDir, 0o755))
	check(os.WriteFile(filepath.Join(jsonDir, "go.json"), forms, 0o644))
}

// The JSON option doc/clients.md declines: with a key type of its own,
// to_json writes a string; pgx v4 cannot scan the column into an int64, v5
// scans its text.
func TestATypeOfItsOwn(t *testing.T) {
	ctx := context.Background()
	probe, err := os.ReadFile(filepath.Join(os.Getenv("SNOWFLAKE_CHECKOUT"), "test/clients/json_type_probe.sql"))
	check(err)
	conn, err := pgx.Connect(ctx, "")
	check(err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, string(probe))
	check(err)
	var id int64
	var exact string
	err = conn.QueryRow(ctx, "SELECT id, id::text FROM probe").Scan(&id, &exact)
	switch {
	case pgxMajor == 4 && err == nil:
		t.Errorf("pgx v4 scanned a key type of its own into an int64: %d", id)
	case pgxMajor == 4:
		t.Logf("as expected of v4: %v", err)
	case err != nil:
		t.Errorf("pgx v5 did not scan a key type of its own into an int64: %v", err)
	case strconv.FormatInt(id, 10) != exact:
		t.Errorf("pgx v5 scanned %d from %s", id, exact)
	}
}
