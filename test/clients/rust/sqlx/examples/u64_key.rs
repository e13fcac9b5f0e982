// The u64 trap (src/main.rs builds this and expects rustc to refuse it):
// sqlx binds no unsigned integer to PostgreSQL, which has none.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), sqlx::Error> {
    let pool = sqlx::PgPool::connect("").await?;
    // guide: begin sqlx-u64
    let customer_id: u64 = 2125717056002330640;
    sqlx::query("SELECT name FROM customers WHERE id = $1").bind(customer_id).fetch_all(&pool).await?;
    // guide: end
    Ok(())
}
