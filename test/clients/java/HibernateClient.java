// Hibernate ORM (Debian's libhibernate3-java, 3.6) with JPA annotations: the
// recipe of doc/clients.md on tables created by the schema, and the trap of
// letting Hibernate create them (hbm2ddl), which makes the key a bigserial.
// Run as a single source file (test/clients/run.sh names the classpath).
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import javax.persistence.Column;
import javax.persistence.Entity;
import javax.persistence.FetchType;
import javax.persistence.GeneratedValue;
import javax.persistence.GenerationType;
import javax.persistence.Id;
import javax.persistence.JoinColumn;
import javax.persistence.ManyToOne;
import javax.persistence.Table;
import org.hibernate.Session;
import org.hibernate.SessionFactory;
import org.hibernate.cfg.Configuration;

public class HibernateClient {
    static int failures = 0;

    static void check(boolean ok, String what) {
        System.out.println((ok ? "ok - " : "not ok - ") + what);
        if (!ok) failures++;
    }

    // guide: begin hibernate-entities
    @Entity
    @Table(name = "customers")
    public static class Customer {
        @Id
        @GeneratedValue(strategy = GenerationType.IDENTITY) // the database assigns it
        @Column(columnDefinition = "bigint default snowflake_nextval()")
        public Long id;
        public String name;
    }

    @Entity
    @Table(name = "orders")
    public static class Order {
        @Id
        @GeneratedValue(strategy = GenerationType.IDENTITY)
        @Column(columnDefinition = "bigint default snowflake_nextval()")
        public Long id;
        @ManyToOne(fetch = FetchType.EAGER)
        @JoinColumn(name = "customer_id", nullable = false)
        public Customer customer;
        public String item;
    }
    // guide: end

    @Entity
    @Table(name = "trap_customers")
    public static class TrapCustomer {
        @Id
        @GeneratedValue(strategy = GenerationType.IDENTITY)
        @Column(columnDefinition = "bigint default snowflake_nextval()")
        public Long id;
        public String name;
    }

    static Properties settings(String url) {
        // guide: begin hibernate-settings
        Properties settings = new Properties();
        settings.setProperty("hibernate.connection.url", url);
        settings.setProperty("hibernate.dialect", "org.hibernate.dialect.PostgreSQLDialect");
        settings.setProperty("hibernate.hbm2ddl.auto", "validate"); // never "create": see the trap
        // guide: end
        return settings;
    }

    static String scalar(Connection conn, String query, Object parameter) throws Exception {
        try (PreparedStatement statement = conn.prepareStatement(query)) {
            if (parameter != null) statement.setObject(1, parameter);
            try (ResultSet row = statement.executeQuery()) {
                return row.next() ? row.getString(1) : null;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String url = System.getenv("JDBC_URL");
        try (Connection conn = DriverManager.getConnection(url)) {
            conn.createStatement().execute(
                    new String(java.nio.file.Files.readAllBytes(java.nio.file.Path.of("test/clients/schema.sql"))));
        }
        SessionFactory factory = new Configuration().addProperties(settings(url))
                .addAnnotatedClass(Customer.class).addAnnotatedClass(Order.class).buildSessionFactory();

        // guide: begin hibernate
        Session session = factory.openSession();
        session.beginTransaction();
        Customer ada = new Customer();
        ada.name = "Ada";
        session.save(ada); // INSERT ... RETURNING: ada.id is the snowflake ID
        Order order = new Order();
        order.customer = ada;
        order.item = "book";
        session.save(order);
        List<Customer> bulk = new ArrayList<>();
        for (String name : List.of("Grace", "Edsger", "Barbara")) {
            Customer customer = new Customer();
            customer.name = name;
            session.save(customer);
            bulk.add(customer);
        }
        session.getTransaction().commit();
        session.close();
        // guide: end

        try (Connection conn = DriverManager.getConnection(url)) {
            check(String.valueOf(ada.id).equals(scalar(conn, "SELECT id::text FROM customers WHERE id = ?", ada.id)),
                  "the ID came back exact: " + ada.id);
            int exact = 0;
            for (Customer customer : bulk) {
                if (String.valueOf(customer.id).equals(
                        scalar(conn, "SELECT id::text FROM customers WHERE id = ?", customer.id))) exact++;
            }
            check(exact == 3 && bulk.stream().map(c -> c.id).distinct().count() == 3, "the bulk IDs came back exact");
            check("7".equals(scalar(conn, "SELECT worker_id FROM snowflake_decode(?)", ada.id))
                  && "3".equals(scalar(conn, "SELECT datacenter_id FROM snowflake_decode(?)", ada.id)),
                  "the ID decodes to this node");
            check("t".equals(scalar(conn, "SELECT abs(extract(epoch FROM now() - ts)) < 300 FROM snowflake_decode(?)", ada.id)),
                  "the ID decodes to now");
        }
        session = factory.openSession();
        Order loaded = (Order) session.createQuery("from HibernateClient$Order where customer.id = :id")
                .setParameter("id", ada.id).uniqueResult();
        check(loaded != null && loaded.customer.id.equals(ada.id) && loaded.item.equals("book"),
              "the foreign key holds the ID");
        session.close();
        factory.close();

        // The trap: hbm2ddl.auto=create ignores columnDefinition for an
        // IDENTITY key and makes it a bigserial, which issues 1, 2, 3.
        Properties create = settings(url);
        create.setProperty("hibernate.hbm2ddl.auto", "create");
        SessionFactory trap = new Configuration().addProperties(create)
                .addAnnotatedClass(TrapCustomer.class).buildSessionFactory();
        session = trap.openSession();
        session.beginTransaction();
        TrapCustomer trapped = new TrapCustomer();
        trapped.name = "Ada";
        session.save(trapped);
        session.getTransaction().commit();
        session.close();
        trap.close();
        try (Connection conn = DriverManager.getConnection(url)) {
            String defaultExpression = scalar(conn, "SELECT column_default FROM information_schema.columns"
                    + " WHERE table_name = 'trap_customers' AND column_name = 'id'", null);
            check(defaultExpression != null && defaultExpression.startsWith("nextval("),
                  "the trap: hbm2ddl made the key a serial (default " + defaultExpression + ")");
            check(trapped.id == 1L, "the trap: its first ID is 1, not a snowflake ID (" + trapped.id + ")");
        }
        System.out.println(failures == 0 ? "hibernate: all checks passed" : "hibernate: " + failures + " checks failed");
        System.exit(failures == 0 ? 0 : 1);
    }
}
