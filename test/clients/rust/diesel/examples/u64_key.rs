// The u64 trap (src/main.rs builds this and expects rustc to refuse it):
// Diesel maps PostgreSQL's bigint to i64 only.
use diesel::prelude::*;

diesel::table! {
    customers (id) {
        id -> BigInt,
        name -> Text,
    }
}

fn main() {
    let mut conn = PgConnection::establish("").unwrap();
    // guide: begin diesel-u64
    let customer_id: u64 = 2125717056002330640;
    let name: String = customers::table.find(customer_id).select(customers::name).first(&mut conn).unwrap();
    // guide: end
    println!("{name}");
}
