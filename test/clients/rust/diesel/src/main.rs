// Diesel: the recipe of doc/clients.md (a schema whose keys are BigInt, an
// Insertable without the key, RETURNING) and the traps (a key declared
// Integer, a u64 key).
#[path = "../../checks.rs"]
mod checks;

use checks::{check, Outcome};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Text};

// guide: begin diesel-schema
diesel::table! {
    customers (id) {
        id -> BigInt, // i64
        name -> Text,
    }
}
diesel::table! {
    orders (id) {
        id -> BigInt,
        customer_id -> BigInt,
        item -> Text,
    }
}
diesel::joinable!(orders -> customers (customer_id));
diesel::allow_tables_to_appear_in_same_query!(customers, orders);

#[derive(Insertable)]
#[diesel(table_name = customers)]
struct NewCustomer<'a> {
    name: &'a str, // no id: PostgreSQL's DEFAULT snowflake_nextval() fills it
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = customers)]
struct Customer {
    id: i64,
    name: String,
}
// guide: end

// The trap: the same table with its key declared Integer (i32).
mod wrong {
    diesel::table! {
        customers (id) {
            id -> Integer,
            name -> Text,
        }
    }
}

#[derive(QueryableByName)]
struct Text1 {
    #[diesel(sql_type = Text)]
    id: String,
}

#[derive(QueryableByName, PartialEq, Debug)]
struct Node {
    #[diesel(sql_type = Integer)]
    datacenter_id: i32,
    #[diesel(sql_type = Integer)]
    worker_id: i32,
    #[diesel(sql_type = Bool)]
    recent: bool,
}

fn failed(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Each ID distinct and held by customers, digit for digit.
fn check_held(conn: &mut PgConnection, ids: &[i64]) -> Outcome {
    let mut texts: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    texts.sort();
    texts.dedup();
    check(texts.len() == ids.len(), format!("IDs not distinct: {ids:?}"))?;
    let held: Vec<String> = diesel::sql_query("SELECT id::text AS id FROM customers WHERE id::text = ANY($1) ORDER BY 1")
        .bind::<Array<Text>, _>(texts.clone())
        .load::<Text1>(conn)
        .map_err(failed)?
        .into_iter()
        .map(|row| row.id)
        .collect();
    check(held == texts, format!("customers holds {held:?}, not {texts:?}"))
}

fn recipe() -> Outcome {
    let mut setup = PgConnection::establish(&checks::database_url()).map_err(failed)?;
    diesel::connection::SimpleConnection::batch_execute(&mut setup, include_str!("../../../schema.sql")).map_err(failed)?;
    let database_url = checks::database_url();
    let run = || -> Result<_, Box<dyn std::error::Error>> {
        // guide: begin diesel
        let mut conn = PgConnection::establish(&database_url)?;

        let customer: Customer = diesel::insert_into(customers::table)
            .values(NewCustomer { name: "Ada" })
            .returning(Customer::as_returning())
            .get_result(&mut conn)?;
        diesel::insert_into(orders::table)
            .values((orders::customer_id.eq(customer.id), orders::item.eq("book")))
            .execute(&mut conn)?;

        // Bulk: one statement, every ID back
        let bulk_ids: Vec<i64> = diesel::insert_into(customers::table)
            .values(vec![NewCustomer { name: "Grace" }, NewCustomer { name: "Edsger" }, NewCustomer { name: "Barbara" }])
            .returning(customers::id)
            .get_results(&mut conn)?;

        let found: Customer = customers::table.find(customer.id).select(Customer::as_select()).first(&mut conn)?;
        // guide: end
        Ok((customer, bulk_ids, found))
    };
    let (customer, bulk_ids, found) = run().map_err(failed)?;
    check(found.id == customer.id && found.name == "Ada", "find() of the new key")?;
    check_held(&mut setup, &[customer.id])?;
    check(bulk_ids.len() == 3, format!("bulk IDs: {bulk_ids:?}"))?;
    check_held(&mut setup, &bulk_ids)?;
    let order: i64 = orders::table
        .filter(orders::item.eq("book"))
        .select(orders::customer_id)
        .first(&mut setup)
        .map_err(failed)?;
    check(order == customer.id, "the order's customer_id")?;
    let node: Node = diesel::sql_query(
        "SELECT datacenter_id, worker_id, abs(extract(epoch FROM now() - ts)) < 300 AS recent FROM snowflake_decode($1)",
    )
    .bind::<BigInt, _>(customer.id)
    .get_result(&mut setup)
    .map_err(failed)?;
    let (datacenter_id, worker_id) = checks::node();
    check(
        node == Node { datacenter_id, worker_id, recent: true },
        format!("{} decodes to {node:?}", customer.id),
    )
}

fn integer_trap() -> Outcome {
    let mut conn = PgConnection::establish(&checks::database_url()).map_err(failed)?;
    let result: Result<i32, _> = diesel::insert_into(wrong::customers::table)
        .values(wrong::customers::name.eq("Grace"))
        .returning(wrong::customers::id)
        .get_result(&mut conn);
    match result {
        Ok(id) => Err(format!("an int8 key was read as Integer: {id}")),
        Err(e) => {
            println!("# a key declared `id -> Integer`: {e}");
            check(e.to_string().contains("i32"), format!("not the decoding error: {e}"))
        }
    }
}

fn main() {
    checks::report(vec![
        ("the recipe: BigInt keys, RETURNING, bulk, a foreign key, find, the decode", recipe()),
        ("the trap: a key declared Integer cannot read an int8", integer_trap()),
        ("the trap: a u64 key does not compile", checks::u64_key_refused(env!("CARGO_MANIFEST_DIR"))),
    ]);
}
