// libpqxx (Debian's libpqxx-dev: 6.4 on bookworm, 8.0 on forky): the recipe
// of doc/clients.md, IDs as std::int64_t, checked against the server.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace {

int failures = 0;

void check(bool condition, const std::string& what) {
  std::cout << (condition ? "ok - " : "not ok - ") << what << '\n';
  if (!condition) ++failures;
}

// Whether the table holds the ID, as the server writes it.
bool held(pqxx::connection& conn, const std::string& table, std::int64_t id) {
  pqxx::nontransaction tx{conn};
  return tx.exec("SELECT count(*) FROM " + table +
                 " WHERE id::text = " + tx.quote(std::to_string(id)))[0][0]
             .as<int>() == 1;
}

}  // namespace

int main() {
  try {
    pqxx::connection setup{""};
    {
      pqxx::nontransaction tx{setup};
      tx.exec("CREATE EXTENSION IF NOT EXISTS snowflake");
      tx.exec(
          "CREATE TABLE customers (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), name text "
          "NOT NULL)");
      tx.exec(
          "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),"
          " customer_id bigint NOT NULL REFERENCES customers, item text NOT NULL)");
    }

    // guide: begin libpqxx
    pqxx::connection conn{""};  // "": libpq's PGHOST, PGDATABASE, ...
    pqxx::work tx{conn};
#if PQXX_VERSION_MAJOR >= 8
    auto customer_id =
        tx.exec("INSERT INTO customers (name) VALUES ($1) RETURNING id", pqxx::params{"Ada"})
            .one_field()
            .as<std::int64_t>();
    tx.exec("INSERT INTO orders (customer_id, item) VALUES ($1, $2)",
            pqxx::params{customer_id, "book"});
#else  // 6 and 7
    auto customer_id =
        tx.exec_params1("INSERT INTO customers (name) VALUES ($1) RETURNING id", "Ada")[0]
            .as<std::int64_t>();
    tx.exec_params("INSERT INTO orders (customer_id, item) VALUES ($1, $2)", customer_id, "book");
#endif
    // Bulk: one statement, every ID back
    std::vector<std::int64_t> bulk_ids;
    for (const auto& row : tx.exec(
             "INSERT INTO customers (name) VALUES ('Grace'), ('Edsger'), ('Barbara') RETURNING id"))
      bulk_ids.push_back(row[0].as<std::int64_t>());
    tx.commit();
    // guide: end

    check(held(setup, "customers", customer_id),
          "customers holds the ID " + std::to_string(customer_id));
    check(customer_id > (std::int64_t{1} << 53), "the ID is past 2^53");
    check(bulk_ids.size() == 3, "three bulk IDs");
    for (auto id : bulk_ids)
      check(held(setup, "customers", id), "customers holds the bulk ID " + std::to_string(id));
    pqxx::nontransaction read{setup};
    auto order = read.exec("SELECT customer_id FROM orders")[0][0].as<std::int64_t>();
    check(order == customer_id, "the foreign key");
    // The result is kept: with libpqxx 8 a row refers to its result.
    const pqxx::result decoded =
        read.exec("SELECT datacenter_id, worker_id FROM snowflake_decode(" +
                  std::to_string(customer_id) + ")");
    const auto node = decoded[0];
    check(node[0].as<std::string>() == std::getenv("SNOWFLAKE_DATACENTER_ID") &&
              node[1].as<std::string>() == std::getenv("SNOWFLAKE_WORKER_ID"),
          "it decodes to this node");
  } catch (const std::exception& error) {
    std::cout << "not ok - " << error.what() << '\n';
    return 1;
  }
  std::cout << failures << " failed\n";
  return failures == 0 ? 0 : 1;
}
