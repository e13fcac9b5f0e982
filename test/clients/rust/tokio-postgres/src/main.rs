// tokio-postgres: the recipe of doc/clients.md (i64 keys, RETURNING), the
// traps (an i32 cannot take a key, a u64 cannot be bound), and serde's JSON,
// whose default and safe forms the layer's JSON test parses in node.
#[path = "../../checks.rs"]
mod checks;

use checks::{check, Outcome};
use serde::Serialize;
use tokio_postgres::{Client, NoTls};

// guide: begin tokio-postgres-json
#[derive(Serialize)]
struct Customer {
    #[serde(serialize_with = "id_as_string")] // a JSON string: exact in JavaScript too
    id: i64,
    name: String,
}

fn id_as_string<S: serde::Serializer>(id: &i64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(id)
}
// guide: end

#[derive(Serialize)]
struct CustomerAsNumber {
    id: i64,
    name: String,
}

async fn connect() -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(&checks::database_url(), NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

fn failed(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Each ID distinct and held by customers, digit for digit.
async fn check_held(client: &Client, ids: &[i64]) -> Outcome {
    let mut texts: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    texts.sort();
    texts.dedup();
    check(texts.len() == ids.len(), format!("IDs not distinct: {ids:?}"))?;
    let rows = client
        .query("SELECT id::text FROM customers WHERE id::text = ANY($1) ORDER BY 1", &[&texts])
        .await
        .map_err(failed)?;
    let held: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
    check(held == texts, format!("customers holds {held:?}, not {texts:?}"))
}

async fn recipe() -> Result<i64, String> {
    let client = connect().await.map_err(failed)?;
    client.batch_execute(include_str!("../../../schema.sql")).await.map_err(failed)?;
    let database_url = checks::database_url();
    let run = async {
        // guide: begin tokio-postgres
        let (client, connection) = tokio_postgres::connect(&database_url, NoTls).await?;
        tokio::spawn(connection); // it runs the connection; client sends the queries

        let row = client.query_one("INSERT INTO customers (name) VALUES ($1) RETURNING id", &[&"Ada"]).await?;
        let customer_id: i64 = row.get("id");
        client.execute("INSERT INTO orders (customer_id, item) VALUES ($1, $2)", &[&customer_id, &"book"]).await?;

        // Bulk: one statement, every ID back
        let names = vec!["Grace", "Edsger", "Barbara"];
        let bulk_ids: Vec<i64> = client
            .query("INSERT INTO customers (name) SELECT unnest($1::text[]) RETURNING id", &[&names])
            .await?
            .iter()
            .map(|row| row.get(0))
            .collect();

        let decoded = client
            .query_one("SELECT datacenter_id, worker_id FROM snowflake_decode($1)", &[&customer_id])
            .await?;
        let (datacenter_id, worker_id): (i32, i32) = (decoded.get(0), decoded.get(1));
        // guide: end
        Ok::<_, tokio_postgres::Error>((customer_id, bulk_ids, (datacenter_id, worker_id)))
    };
    let (customer_id, bulk_ids, decoded) = run.await.map_err(failed)?;
    check_held(&client, &[customer_id]).await?;
    check(bulk_ids.len() == 3, format!("bulk IDs: {bulk_ids:?}"))?;
    check_held(&client, &bulk_ids).await?;
    let order = client
        .query_one("SELECT customer_id FROM orders WHERE item = 'book'", &[])
        .await
        .map_err(failed)?;
    check(order.get::<_, i64>(0) == customer_id, "the order's customer_id")?;
    check(decoded == checks::node(), format!("{customer_id} decodes to {decoded:?}, not {:?}", checks::node()))?;
    let recent = client
        .query_one("SELECT abs(extract(epoch FROM now() - ts)) < 300 FROM snowflake_decode($1)", &[&customer_id])
        .await
        .map_err(failed)?;
    check(recent.get(0), format!("{customer_id} does not decode to now"))?;
    Ok(customer_id)
}

async fn i32_trap() -> Outcome {
    let client = connect().await.map_err(failed)?;
    let row = client
        .query_one("INSERT INTO customers (name) VALUES ('Grace') RETURNING id", &[])
        .await
        .map_err(failed)?;
    match row.try_get::<_, i32>("id") {
        Ok(id) => Err(format!("an int8 key was read into an i32: {id}")),
        Err(e) => {
            // "error deserializing column 0", caused by the type mismatch
            let cause = std::error::Error::source(&e).map(|c| c.to_string()).unwrap_or_default();
            println!("# row.try_get::<_, i32>(\"id\"): {e}: {cause}");
            check(
                cause.contains("i32") && cause.contains("int8"),
                format!("not the type error: {e}: {cause}"),
            )
        }
    }
}

/// How serde_json writes the ID: a number by default, the recipe's string.
fn json_forms(customer_id: i64) -> Outcome {
    let customer = Customer { id: customer_id, name: "Ada".into() };
    let safe = serde_json::to_string(&customer).map_err(failed)?;
    let default = serde_json::to_string(&CustomerAsNumber { id: customer_id, name: "Ada".into() }).map_err(failed)?;
    check(safe.contains(&format!("\"id\":\"{customer_id}\"")), format!("the recipe wrote {safe}"))?;
    check(default.contains(&format!("\"id\":{customer_id}")), format!("serde's default wrote {default}"))?;
    let forms = serde_json::json!({ "exact": customer_id.to_string(), "forms": { "default": default, "safe": safe } });
    let dir = format!("{}/../../../../build/clients/json", env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(&dir).map_err(failed)?;
    std::fs::write(format!("{dir}/rust.json"), forms.to_string()).map_err(failed)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let recipe = recipe().await;
    let json = match &recipe {
        Ok(id) => json_forms(*id),
        Err(_) => Err("the recipe failed".into()),
    };
    checks::report(vec![
        ("the recipe: i64 keys, RETURNING, bulk, a foreign key, the decode", recipe.map(|_| ())),
        ("the trap: an i32 cannot take an int8 key", i32_trap().await),
        ("the trap: a u64 key does not compile", checks::u64_key_refused(env!("CARGO_MANIFEST_DIR"))),
        ("serde_json: the key a number by default, a string with the recipe", json),
    ]);
}
