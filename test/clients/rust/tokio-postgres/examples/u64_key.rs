// The u64 trap (src/main.rs builds this and expects rustc to refuse it):
// tokio-postgres binds no unsigned integer, as PostgreSQL has none.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect("", tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    // guide: begin tokio-postgres-u64
    let customer_id: u64 = 2125717056002330640;
    client.query("SELECT name FROM customers WHERE id = $1", &[&customer_id]).await?;
    // guide: end
    Ok(())
}
