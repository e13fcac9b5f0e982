// pgjdbc (Debian's libpostgresql-jdbc-java): the recipe of doc/clients.md.
// Run as a single source file: java -cp postgresql.jar Pgjdbc.java, with
// JDBC_URL set (test/clients/run.sh).
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

public class Pgjdbc {
    static int failures = 0;

    static void check(boolean ok, String what) {
        System.out.println((ok ? "ok - " : "not ok - ") + what);
        if (!ok) failures++;
    }

    // The IDs among ids that the table holds, as the server writes them.
    static List<String> held(Connection conn, String table, List<Long> ids) throws SQLException {
        List<String> texts = new ArrayList<>();
        for (long id : ids) texts.add(Long.toString(id));
        List<String> found = new ArrayList<>();
        try (PreparedStatement query = conn.prepareStatement(
                "SELECT id::text FROM " + table + " WHERE id::text = ANY(?) ORDER BY 1")) {
            query.setArray(1, conn.createArrayOf("text", texts.toArray()));
            try (ResultSet rows = query.executeQuery()) {
                while (rows.next()) found.add(rows.getString(1));
            }
        }
        return found;
    }

    static List<String> sortedTexts(List<Long> ids) {
        List<String> texts = new ArrayList<>();
        for (long id : ids) texts.add(Long.toString(id));
        texts.sort(null);
        return texts;
    }

    public static void main(String[] args) throws Exception {
        String url = System.getenv("JDBC_URL");
        try (Connection conn = DriverManager.getConnection(url);
             Statement statement = conn.createStatement()) {
            statement.execute(Files.readString(Path.of("test/clients/schema.sql")));
        }

        // guide: begin pgjdbc
        long customerId;
        List<Long> bulkIds = new ArrayList<>();
        int datacenterId, workerId;
        try (Connection conn = DriverManager.getConnection(url)) {
            try (PreparedStatement insert = conn.prepareStatement(
                    "INSERT INTO customers (name) VALUES (?)", new String[] {"id"})) {
                insert.setString(1, "Ada");
                insert.executeUpdate();
                try (ResultSet keys = insert.getGeneratedKeys()) {
                    keys.next();
                    customerId = keys.getLong("id");
                }
            }
            try (PreparedStatement insert = conn.prepareStatement(
                    "INSERT INTO orders (customer_id, item) VALUES (?, ?)")) {
                insert.setLong(1, customerId);
                insert.setString(2, "book");
                insert.executeUpdate();
            }

            // Bulk: a batch, and every ID back
            try (PreparedStatement insert = conn.prepareStatement(
                    "INSERT INTO customers (name) VALUES (?)", new String[] {"id"})) {
                for (String name : List.of("Grace", "Edsger", "Barbara")) {
                    insert.setString(1, name);
                    insert.addBatch();
                }
                insert.executeBatch();
                try (ResultSet keys = insert.getGeneratedKeys()) {
                    while (keys.next()) bulkIds.add(keys.getLong("id"));
                }
            }

            try (PreparedStatement decode = conn.prepareStatement(
                    "SELECT * FROM snowflake_decode(?)")) {
                decode.setLong(1, customerId);
                try (ResultSet row = decode.executeQuery()) {
                    row.next();
                    datacenterId = row.getInt("datacenter_id");
                    workerId = row.getInt("worker_id");
                }
            }
        }
        // guide: end

        try (Connection conn = DriverManager.getConnection(url)) {
            check(held(conn, "customers", List.of(customerId)).equals(sortedTexts(List.of(customerId))),
                  "the ID came back exact: " + customerId);
            check(bulkIds.size() == 3 && bulkIds.stream().distinct().count() == 3, "three distinct bulk IDs: " + bulkIds);
            check(held(conn, "customers", bulkIds).equals(sortedTexts(bulkIds)), "the bulk IDs came back exact");
            try (PreparedStatement query = conn.prepareStatement("SELECT item FROM orders WHERE customer_id = ?")) {
                query.setLong(1, customerId);
                try (ResultSet row = query.executeQuery()) {
                    check(row.next() && row.getString(1).equals("book"), "the foreign key holds the ID");
                }
            }
            try (PreparedStatement query = conn.prepareStatement(
                    "SELECT abs(extract(epoch FROM now() - ts)) < 300 FROM snowflake_decode(?)")) {
                query.setLong(1, customerId);
                try (ResultSet row = query.executeQuery()) {
                    check(row.next() && row.getBoolean(1), "the ID decodes to now");
                }
            }
        }
        check(datacenterId == Integer.parseInt(System.getenv("SNOWFLAKE_DATACENTER_ID"))
              && workerId == Integer.parseInt(System.getenv("SNOWFLAKE_WORKER_ID")),
              "the ID decodes to this node: " + datacenterId + ", " + workerId);

        // The JSON option doc/clients.md declines: with a key type of its own,
        // getObject returns a PGobject, not a Long (what JPA maps a key to).
        try (Connection conn = DriverManager.getConnection(url);
             Statement statement = conn.createStatement()) {
            statement.execute(Files.readString(Path.of("test/clients/json_type_probe.sql")));
            try (ResultSet row = statement.executeQuery("SELECT id FROM probe")) {
                row.next();
                Object value = row.getObject(1);
                check(!(value instanceof Long), "a key type of its own comes back as " + value.getClass().getName());
            }
        }
        System.out.println(failures == 0 ? "pgjdbc: all checks passed" : "pgjdbc: " + failures + " checks failed");
        System.exit(failures == 0 ? 0 : 1);
    }
}
