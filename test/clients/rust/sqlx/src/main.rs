// sqlx: the recipe of doc/clients.md (i64 keys, RETURNING) and the traps (an
// i32 cannot take a key, a u64 cannot be bound).
#[path = "../../checks.rs"]
mod checks;

use checks::{check, Outcome};
use sqlx::PgPool;

fn failed(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Each ID distinct and held by customers, digit for digit.
async fn check_held(pool: &PgPool, ids: &[i64]) -> Outcome {
    let mut texts: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    texts.sort();
    texts.dedup();
    check(texts.len() == ids.len(), format!("IDs not distinct: {ids:?}"))?;
    let held: Vec<String> =
        sqlx::query_scalar("SELECT id::text FROM customers WHERE id::text = ANY($1) ORDER BY 1")
            .bind(&texts)
            .fetch_all(pool)
            .await
            .map_err(failed)?;
    check(held == texts, format!("customers holds {held:?}, not {texts:?}"))
}

async fn recipe() -> Outcome {
    let setup = PgPool::connect(&checks::database_url()).await.map_err(failed)?;
    sqlx::raw_sql(include_str!("../../../schema.sql")).execute(&setup).await.map_err(failed)?;
    let database_url = checks::database_url();
    let run = async {
        // guide: begin sqlx
        let pool = PgPool::connect(&database_url).await?;

        let customer_id: i64 = sqlx::query_scalar("INSERT INTO customers (name) VALUES ($1) RETURNING id")
            .bind("Ada")
            .fetch_one(&pool)
            .await?;
        sqlx::query("INSERT INTO orders (customer_id, item) VALUES ($1, $2)")
            .bind(customer_id)
            .bind("book")
            .execute(&pool)
            .await?;

        // Bulk: one statement, every ID back
        let bulk_ids: Vec<i64> = sqlx::query_scalar("INSERT INTO customers (name) SELECT unnest($1::text[]) RETURNING id")
            .bind(vec!["Grace", "Edsger", "Barbara"])
            .fetch_all(&pool)
            .await?;

        let (datacenter_id, worker_id): (i32, i32) =
            sqlx::query_as("SELECT datacenter_id, worker_id FROM snowflake_decode($1)")
                .bind(customer_id)
                .fetch_one(&pool)
                .await?;
        // guide: end
        Ok::<_, sqlx::Error>((customer_id, bulk_ids, (datacenter_id, worker_id)))
    };
    let (customer_id, bulk_ids, decoded) = run.await.map_err(failed)?;
    check_held(&setup, &[customer_id]).await?;
    check(bulk_ids.len() == 3, format!("bulk IDs: {bulk_ids:?}"))?;
    check_held(&setup, &bulk_ids).await?;
    let order: i64 = sqlx::query_scalar("SELECT customer_id FROM orders WHERE item = 'book'")
        .fetch_one(&setup)
        .await
        .map_err(failed)?;
    check(order == customer_id, "the order's customer_id")?;
    check(decoded == checks::node(), format!("{customer_id} decodes to {decoded:?}, not {:?}", checks::node()))?;
    let recent: bool = sqlx::query_scalar("SELECT abs(extract(epoch FROM now() - ts)) < 300 FROM snowflake_decode($1)")
        .bind(customer_id)
        .fetch_one(&setup)
        .await
        .map_err(failed)?;
    check(recent, format!("{customer_id} does not decode to now"))
}

async fn i32_trap() -> Outcome {
    let pool = PgPool::connect(&checks::database_url()).await.map_err(failed)?;
    let result: Result<i32, _> = sqlx::query_scalar("INSERT INTO customers (name) VALUES ('Grace') RETURNING id")
        .fetch_one(&pool)
        .await;
    match result {
        Ok(id) => Err(format!("an int8 key was read into an i32: {id}")),
        Err(e) => {
            println!("# query_scalar::<_, i32>: {e}");
            check(e.to_string().contains("i32"), format!("not the type error: {e}"))
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    checks::report(vec![
        ("the recipe: i64 keys, RETURNING, bulk, a foreign key, the decode", recipe().await),
        ("the trap: an i32 cannot take an int8 key", i32_trap().await),
        ("the trap: a u64 key does not compile", checks::u64_key_refused(env!("CARGO_MANIFEST_DIR"))),
    ]);
}
