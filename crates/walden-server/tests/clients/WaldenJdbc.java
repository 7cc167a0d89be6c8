// Drives `walden serve` with pgjdbc, the PostgreSQL JDBC driver: run by
// crates/walden-server/tests/jdbc.rs.
//
// Usage: java -cp postgresql.jar:CLASSES WaldenJdbc PORT USER PASSWORD (TCP on loopback,
// SCRAM-SHA-256). Prints one line per check and exits non-zero at the first one that fails
// (a mismatch or a driver error), after the line that says which.

import java.math.BigDecimal;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.UUID;

public class WaldenJdbc {
    static String url;
    static Properties props;

    /** A failed expectation: what was expected and what came back. */
    static final class Mismatch extends RuntimeException {
        Mismatch(String what) {
            super(what);
        }
    }

    static void check(String name) {
        System.out.println("ok " + name);
        System.out.flush();
    }

    static void expect(boolean cond, String what) {
        if (!cond) {
            throw new Mismatch(what);
        }
    }

    static void expectEq(Object want, Object got, String what) {
        if (!Objects.equals(want, got)) {
            throw new Mismatch(what + ": expected <" + want + "> but got <" + got + ">");
        }
    }

    /** Runs `body`, which must fail with SQLSTATE `state`; returns the exception. */
    static SQLException expectState(String state, String what, SqlBody body) {
        try {
            body.run();
        } catch (SQLException e) {
            expectEq(state, e.getSQLState(), what + " (message: " + e.getMessage() + ")");
            return e;
        }
        throw new Mismatch(what + ": no error, expected SQLSTATE " + state);
    }

    interface SqlBody {
        void run() throws SQLException;
    }

    static Connection connect() throws SQLException {
        return DriverManager.getConnection(url, props);
    }

    static Connection connect(String extra, String value) throws SQLException {
        Properties p = new Properties();
        p.putAll(props);
        p.setProperty(extra, value);
        return DriverManager.getConnection(url, p);
    }

    public static void main(String[] args) {
        if (args.length != 3) {
            System.err.println("usage: WaldenJdbc PORT USER PASSWORD");
            System.exit(2);
        }
        url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/walden";
        props = new Properties();
        props.setProperty("user", args[1]);
        props.setProperty("password", args[2]);
        props.setProperty("sslmode", "disable");
        props.setProperty("connectTimeout", "10");
        props.setProperty("socketTimeout", "60");
        try {
            run();
        } catch (Mismatch e) {
            System.out.println("FAILED: " + e.getMessage());
            e.printStackTrace(System.out);
            System.exit(1);
        } catch (SQLException e) {
            System.out.println("FAILED with SQLException (SQLSTATE " + e.getSQLState() + "): " + e.getMessage());
            e.printStackTrace(System.out);
            for (SQLException n = e.getNextException(); n != null; n = n.getNextException()) {
                System.out.println("next: (SQLSTATE " + n.getSQLState() + ") " + n.getMessage());
            }
            System.exit(1);
        } catch (Throwable e) {
            System.out.println("FAILED with " + e);
            e.printStackTrace(System.out);
            System.exit(1);
        }
        System.out.println("all checks passed");
    }

    static void run() throws Exception {
        try (Connection c = connect()) {
            connectAndMetadata(c);
            statements(c);
            settings(c);
            databaseMetaData(c);
            typedParameters(c);
            reusedPreparedStatements(c);
            errors(c);
            transactions(c);
            batches(c);
            generatedKeys(c);
            datesTimesNumerics(c);
            fetchSize(c);
            cancel(c);
        }
        serverPreparedFromTheStart();
        wrongPassword();
    }

    static void connectAndMetadata(Connection c) throws SQLException {
        expect(c.isValid(5), "isValid");
        DatabaseMetaData md = c.getMetaData();
        expectEq("PostgreSQL", md.getDatabaseProductName(), "getDatabaseProductName");
        String version = md.getDatabaseProductVersion();
        expect(version.startsWith("15."), "getDatabaseProductVersion is 15.x: " + version);
        expectEq(15, md.getDatabaseMajorVersion(), "getDatabaseMajorVersion");
        expect(md.getDriverName().contains("PostgreSQL"), "getDriverName: " + md.getDriverName());
        expect(md.getUserName().equals(props.getProperty("user")), "getUserName: " + md.getUserName());
        expect(c.getAutoCommit(), "autocommit is on by default");
        check("connect with SCRAM, isValid, DatabaseMetaData (server " + version + ", driver "
                + md.getDriverVersion() + ", JVM time zone " + java.util.TimeZone.getDefault().getID() + ")");

        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select version()")) {
            expect(rs.next(), "a row of version()");
            expect(rs.getString(1).startsWith("PostgreSQL 15.0 (Walden"), "version(): " + rs.getString(1));
        }
        // What pgjdbc sets on connect went through: its ParameterStatus values are the
        // driver's view of the session.
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("show application_name")) {
            expect(rs.next(), "a row of show application_name");
            expectEq("PostgreSQL JDBC Driver", rs.getString(1), "application_name");
        }
        c.setClientInfo("ApplicationName", "walden-jdbc-test");
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("show application_name")) {
            expect(rs.next(), "a row of show application_name");
            expectEq("walden-jdbc-test", rs.getString(1), "application_name after setClientInfo");
        }
        expectEq("walden-jdbc-test", c.getClientInfo("ApplicationName"), "getClientInfo");
        check("version(), application_name and setClientInfo");
    }

    static void statements(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            expectEq(0, s.executeUpdate(
                    "create table kinds (id int primary key, big bigint, t text, u uuid, b bool, f float8, n numeric(10,2))"),
                    "create table's update count");
            expectEq(2, s.executeUpdate("insert into kinds (id, t) values (-1, 'a'), (-2, 'b')"),
                    "insert's update count");
            try (ResultSet rs = s.executeQuery("select id, t from kinds order by id")) {
                List<String> got = new ArrayList<>();
                while (rs.next()) {
                    got.add(rs.getInt("id") + ":" + rs.getString("t"));
                }
                expectEq(List.of("-2:b", "-1:a"), got, "rows of a plain query");
            }
            // execute() with a result and one without.
            expect(s.execute("select 1"), "execute(select) has a result set");
            expect(!s.execute("delete from kinds where id < 0"), "execute(delete) has none");
            expectEq(2, s.getUpdateCount(), "delete's update count");
        }
        // The table as DatabaseMetaData lists it (pgjdbc's query over pg_class and
        // pg_namespace).
        try (ResultSet rs = c.getMetaData().getTables(null, null, "kinds", new String[] {"TABLE"})) {
            expect(rs.next(), "getTables finds kinds");
            expectEq("kinds", rs.getString("TABLE_NAME"), "getTables' TABLE_NAME");
            expectEq("TABLE", rs.getString("TABLE_TYPE"), "getTables' TABLE_TYPE");
            expect(!rs.next(), "getTables finds one table");
        }
        check("Statement executeUpdate, executeQuery, execute; DatabaseMetaData.getTables");
    }

    /** The rows of a result set, each the given columns' values joined by `|`. */
    static List<String> rows(ResultSet rs, String... columns) throws SQLException {
        List<String> out = new ArrayList<>();
        try (rs) {
            while (rs.next()) {
                List<String> values = new ArrayList<>();
                for (String col : columns) {
                    values.add(String.valueOf(rs.getString(col)));
                }
                out.add(String.join("|", values));
            }
        }
        return out;
    }

    static String one(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            expect(rs.next(), "a row of " + sql);
            String v = rs.getString(1);
            expect(!rs.next(), "one row of " + sql);
            return v;
        }
    }

    static void settings(Connection c) throws SQLException {
        // What the issue asked for: current_setting, as tools read the server's settings.
        expectEq("150000", one(c, "select current_setting('server_version_num')"), "server_version_num");
        expectEq("8192", one(c, "select current_setting('block_size')"), "block_size");
        expectEq("UTF8", one(c, "select current_setting('client_encoding')"), "client_encoding");
        expectEq("walden-jdbc-test", one(c, "select current_setting('application_name')"),
                "application_name as setClientInfo left it");
        expectEq(null, one(c, "select current_setting('no.such_setting', true)"), "missing_ok");
        expectState("42704", "an unknown setting", () -> one(c, "select current_setting('no_such_setting')"));
        try (PreparedStatement p = c.prepareStatement("select current_setting(?)")) {
            p.setString(1, "standard_conforming_strings");
            try (ResultSet rs = p.executeQuery()) {
                expect(rs.next(), "current_setting of a parameter");
                expectEq("on", rs.getString(1), "current_setting of a parameter");
            }
        }
        // set_config: what SHOW reads; is_local lasts until the transaction ends.
        expectEq("2min", one(c, "select set_config('statement_timeout', '120000', false)"), "set_config's value");
        expectEq("2min", one(c, "show statement_timeout"), "SHOW after set_config");
        c.setAutoCommit(false);
        expectEq("5s", one(c, "select set_config('statement_timeout', '5000', true)"), "set_config local");
        expectEq("5s", one(c, "show statement_timeout"), "SHOW inside the transaction");
        c.commit();
        expectEq("2min", one(c, "show statement_timeout"), "SHOW after the transaction");
        try (Statement s = c.createStatement()) {
            s.execute("set local statement_timeout = '7s'");
            expectEq("7s", one(c, "select current_setting('statement_timeout')"), "after SET LOCAL");
            c.rollback();
            s.execute("set statement_timeout = '9s'");
            c.rollback();
        }
        c.setAutoCommit(true);
        expectEq("2min", one(c, "show statement_timeout"), "SET LOCAL and a rolled-back SET undone");
        try (Statement s = c.createStatement()) {
            s.execute("reset statement_timeout");
        }
        expectEq("0", one(c, "show statement_timeout"), "RESET");
        expectEq("32", one(c, "select setting from pg_catalog.pg_settings where name = 'max_index_keys'"),
                "pg_settings");
        check("current_setting, set_config (is_local within a transaction), SET LOCAL, RESET, pg_settings");
    }

    static void databaseMetaData(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.executeUpdate("create table meta_parent (id int primary key, code varchar(10) not null unique, "
                    + "note text default 'none', amount numeric(10,2), made timestamptz default now())");
            s.executeUpdate("create table meta_child (id bigserial primary key, parent_id int not null "
                    + "references meta_parent (id) on delete cascade, flag bool default true, doc jsonb, "
                    + "span interval)");
            s.executeUpdate("create index meta_child_parent on meta_child (parent_id desc)");
        }
        DatabaseMetaData md = c.getMetaData();
        // Every answer here is PostgreSQL 15's for the same tables (pgjdbc 42.5.5).
        expectEq(List.of(
                "meta_child|id|-5|bigserial|19|0|0|nextval('meta_child_id_seq'::regclass)|1|NO|YES",
                "meta_child|parent_id|4|int4|10|0|0|null|2|NO|NO",
                "meta_child|flag|-7|bool|1|0|1|true|3|YES|NO",
                "meta_child|doc|1111|jsonb|2147483647|0|1|null|4|YES|NO",
                "meta_child|span|1111|interval|49|6|1|null|5|YES|NO",
                "meta_parent|id|4|int4|10|0|0|null|1|NO|NO",
                "meta_parent|code|12|varchar|10|0|0|null|2|NO|NO",
                "meta_parent|note|12|text|2147483647|0|1|'none'::text|3|YES|NO",
                "meta_parent|amount|2|numeric|10|2|1|null|4|YES|NO",
                "meta_parent|made|93|timestamptz|35|6|1|now()|5|YES|NO"),
                rows(md.getColumns(null, null, "meta_%", null), "TABLE_NAME", "COLUMN_NAME", "DATA_TYPE",
                        "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS", "NULLABLE", "COLUMN_DEF",
                        "ORDINAL_POSITION", "IS_NULLABLE", "IS_AUTOINCREMENT"),
                "getColumns");
        expectEq(List.of("meta_parent|id|1|meta_parent_pkey"),
                rows(md.getPrimaryKeys(null, null, "meta_parent"), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ",
                        "PK_NAME"),
                "getPrimaryKeys");
        expectEq(List.of("meta_child|id|1|meta_child_pkey"),
                rows(md.getPrimaryKeys(null, "public", "meta_child"), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ",
                        "PK_NAME"),
                "getPrimaryKeys in schema public");
        // CARDINALITY and PAGES are left out: PostgreSQL counts an empty index's tuples
        // (0) and its metapage (1); Walden keeps no index statistics.
        expectEq(List.of(
                "f|meta_child_pkey|3|1|id|A",
                "t|meta_child_parent|3|1|parent_id|D"),
                rows(md.getIndexInfo(null, null, "meta_child", false, false), "NON_UNIQUE", "INDEX_NAME",
                        "TYPE", "ORDINAL_POSITION", "COLUMN_NAME", "ASC_OR_DESC"),
                "getIndexInfo");
        expectEq(List.of(
                "f|meta_parent_code_key|3|1|code|A",
                "f|meta_parent_pkey|3|1|id|A"),
                rows(md.getIndexInfo(null, null, "meta_parent", true, false), "NON_UNIQUE", "INDEX_NAME",
                        "TYPE", "ORDINAL_POSITION", "COLUMN_NAME", "ASC_OR_DESC"),
                "getIndexInfo(unique)");
        expectEq(List.of("information_schema", "pg_catalog", "public"),
                rows(md.getSchemas(), "TABLE_SCHEM"), "getSchemas");
        expectEq(List.of("public"), rows(md.getSchemas(null, "pub%"), "TABLE_SCHEM"), "getSchemas(pattern)");
        List<String> fk = List.of(
                "meta_parent|id|meta_child|parent_id|1|3|0|meta_child_parent_id_fkey|meta_parent_pkey|7");
        String[] fkColumns = {"PKTABLE_NAME", "PKCOLUMN_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "KEY_SEQ",
                "UPDATE_RULE", "DELETE_RULE", "FK_NAME", "PK_NAME", "DEFERRABILITY"};
        expectEq(fk, rows(md.getImportedKeys(null, null, "meta_child"), fkColumns), "getImportedKeys");
        expectEq(fk, rows(md.getExportedKeys(null, null, "meta_parent"), fkColumns), "getExportedKeys");
        expectEq(fk, rows(md.getCrossReference(null, null, "meta_parent", null, null, "meta_child"), fkColumns),
                "getCrossReference");
        expectEq(List.of(), rows(md.getImportedKeys(null, null, "meta_parent"), fkColumns),
                "getImportedKeys of a table without foreign keys");
        // getTypeInfo: Walden's types, as PostgreSQL lists them (its others left out).
        expectEq(List.of(
                "bool|-7|0|t", "int8|-5|0|f", "bigserial|-5|0|f", "oid|-5|0|t", "bytea|-2|0|t",
                "char|1|0|t", "bpchar|1|10485760|t", "numeric|2|1000|f", "int4|4|0|f", "serial|4|0|f",
                "int2|5|0|f", "smallserial|5|0|f", "float8|8|0|f", "name|12|0|t", "text|12|0|t",
                "varchar|12|10485760|t", "date|91|0|t", "timestamp|93|6|t", "timestamptz|93|6|t",
                "interval|1111|6|t", "regclass|1111|0|t", "uuid|1111|0|t", "jsonb|1111|0|t"),
                rows(md.getTypeInfo(), "TYPE_NAME", "DATA_TYPE", "PRECISION", "UNSIGNED_ATTRIBUTE"),
                "getTypeInfo");
        check("DatabaseMetaData: getColumns (NOT NULL, defaults, serial, jsonb, interval), getPrimaryKeys, "
                + "getIndexInfo, getSchemas, getImportedKeys, getExportedKeys, getCrossReference, getTypeInfo");
    }

    static void typedParameters(Connection c) throws SQLException {
        UUID u = UUID.fromString("12345678-1234-5678-1234-567812345678");
        try (PreparedStatement p = c.prepareStatement("insert into kinds values (?, ?, ?, ?, ?, ?, ?)")) {
            p.setInt(1, 1);
            p.setLong(2, 1L << 40);
            p.setString(3, "héllo, wörld");
            p.setObject(4, u);
            p.setBoolean(5, true);
            p.setDouble(6, 1.5);
            p.setBigDecimal(7, new BigDecimal("12.34"));
            expectEq(1, p.executeUpdate(), "insert's update count");
            p.setInt(1, 2);
            p.setNull(2, Types.BIGINT);
            p.setNull(3, Types.VARCHAR);
            p.setNull(4, Types.OTHER);
            p.setBoolean(5, false);
            p.setDouble(6, -0.25);
            p.setNull(7, Types.NUMERIC);
            expectEq(1, p.executeUpdate(), "insert of NULLs' update count");
            // Extremes: values at their types' ends survive the trip.
            p.setInt(1, Integer.MIN_VALUE);
            p.setLong(2, Long.MAX_VALUE);
            p.setString(3, "");
            p.setObject(4, new UUID(-1L, -1L));
            p.setBoolean(5, true);
            p.setDouble(6, 0.1 + 0.2);
            p.setBigDecimal(7, new BigDecimal("-99999999.99"));
            expectEq(1, p.executeUpdate(), "insert of extremes' update count");
        }
        try (PreparedStatement q = c.prepareStatement("select id, big, t, u, b, f, n from kinds where id = ?")) {
            q.setInt(1, 1);
            try (ResultSet rs = q.executeQuery()) {
                expect(rs.next(), "row 1");
                expectEq(1, rs.getInt(1), "getInt");
                expectEq(1L << 40, rs.getLong(2), "getLong");
                expectEq("héllo, wörld", rs.getString(3), "getString");
                expectEq(u, rs.getObject(4), "getObject(uuid)");
                expectEq(u, rs.getObject(4, UUID.class), "getObject(uuid, UUID.class)");
                expectEq(true, rs.getBoolean(5), "getBoolean");
                expectEq(1.5, rs.getDouble(6), "getDouble");
                expectEq(new BigDecimal("12.34"), rs.getBigDecimal(7), "getBigDecimal");
                expect(!rs.wasNull(), "wasNull after a value");
                expect(!rs.next(), "one row");
            }
            q.setInt(1, 2);
            try (ResultSet rs = q.executeQuery()) {
                expect(rs.next(), "row 2");
                expectEq(0L, rs.getLong(2), "getLong of NULL");
                expect(rs.wasNull(), "wasNull after NULL bigint");
                expectEq(null, rs.getString(3), "getString of NULL");
                expect(rs.wasNull(), "wasNull after NULL text");
                expectEq(null, rs.getObject(4), "getObject of NULL uuid");
                expectEq(false, rs.getBoolean(5), "getBoolean false");
                expect(!rs.wasNull(), "wasNull after false");
                expectEq(-0.25, rs.getDouble(6), "getDouble negative");
                expectEq(null, rs.getBigDecimal(7), "getBigDecimal of NULL");
                expect(rs.wasNull(), "wasNull after NULL numeric");
            }
            q.setInt(1, Integer.MIN_VALUE);
            try (ResultSet rs = q.executeQuery()) {
                expect(rs.next(), "row of extremes");
                expectEq(Integer.MIN_VALUE, rs.getInt(1), "getInt(min)");
                expectEq(Long.MAX_VALUE, rs.getLong(2), "getLong(max)");
                expectEq("", rs.getString(3), "empty string");
                expect(!rs.wasNull(), "empty string is not NULL");
                expectEq(new UUID(-1L, -1L), rs.getObject(4), "uuid of all ones");
                expectEq(0.1 + 0.2, rs.getDouble(6), "0.1 + 0.2 to the last bit");
                expectEq(new BigDecimal("-99999999.99"), rs.getBigDecimal(7), "numeric at its precision");
            }
        }
        // Parameters whose types the server infers from where they are used.
        try (PreparedStatement q = c.prepareStatement("select t from kinds where b = ? and f > ? and u = ?")) {
            q.setBoolean(1, true);
            q.setDouble(2, 1.0);
            q.setObject(3, u);
            try (ResultSet rs = q.executeQuery()) {
                expect(rs.next(), "row by bool, float and uuid");
                expectEq("héllo, wörld", rs.getString(1), "row by bool, float and uuid");
            }
        }
        try (PreparedStatement q = c.prepareStatement("select id, t from kinds order by id limit 1")) {
            ResultSetMetaData md = q.getMetaData();
            expectEq(2, md.getColumnCount(), "column count before execution");
            expectEq("id", md.getColumnName(1), "column name");
            expectEq(Types.INTEGER, md.getColumnType(1), "int column's JDBC type");
            expectEq(Types.VARCHAR, md.getColumnType(2), "text column's JDBC type");
            expectEq("int4", md.getColumnTypeName(1), "int column's type name");
        }
        check("PreparedStatement: setInt, setLong, setString, setObject(UUID), setBoolean, setDouble, "
                + "setBigDecimal, setNull; read back with wasNull; result metadata");
    }

    static void reusedPreparedStatements(Connection c) throws SQLException {
        // pgjdbc runs a PreparedStatement through the unnamed statement 4 times, then
        // (prepareThreshold=5) as a named server-side statement, whose results it asks
        // for in binary.
        try (Statement s = c.createStatement()) {
            s.executeUpdate("create table reuse (id int primary key, big bigint, f float8, u uuid, t text, b bool)");
        }
        try (PreparedStatement ins = c.prepareStatement("insert into reuse values (?, ?, ?, ?, ?, ?)");
                PreparedStatement sel = c.prepareStatement(
                        "select id, big, f, u, t, b from reuse where id = ?")) {
            for (int i = 1; i <= 20; i++) {
                ins.setInt(1, i);
                ins.setLong(2, (long) i * 1_000_000_007L);
                ins.setDouble(3, i / 4.0);
                ins.setObject(4, new UUID(i, -i));
                if (i % 3 == 0) {
                    ins.setNull(5, Types.VARCHAR);
                } else {
                    ins.setString(5, "row " + i);
                }
                ins.setBoolean(6, i % 2 == 0);
                expectEq(1, ins.executeUpdate(), "insert #" + i);

                sel.setInt(1, i);
                try (ResultSet rs = sel.executeQuery()) {
                    expect(rs.next(), "row " + i + " read back");
                    expectEq(i, rs.getInt(1), "id on execution #" + i);
                    expectEq((long) i * 1_000_000_007L, rs.getLong(2), "bigint on execution #" + i);
                    expectEq(i / 4.0, rs.getDouble(3), "float8 on execution #" + i);
                    expectEq(new UUID(i, -i), rs.getObject(4), "uuid on execution #" + i);
                    expectEq(i % 3 == 0 ? null : "row " + i, rs.getString(5), "text on execution #" + i);
                    expectEq(i % 2 == 0, rs.getBoolean(6), "bool on execution #" + i);
                    expect(!rs.next(), "one row on execution #" + i);
                }
            }
        }
        // The same SQL in a new PreparedStatement reuses the driver's cached server
        // statement; a statement closed and prepared again must still run.
        for (int round = 0; round < 3; round++) {
            try (PreparedStatement sum = c.prepareStatement("select count(*), sum(big) from reuse where id >= ?")) {
                for (int k = 0; k < 7; k++) {
                    sum.setInt(1, 11);
                    try (ResultSet rs = sum.executeQuery()) {
                        expect(rs.next(), "count row");
                        expectEq(10L, rs.getLong(1), "count(*) round " + round + " run " + k);
                        long want = 0;
                        for (int i = 11; i <= 20; i++) {
                            want += (long) i * 1_000_000_007L;
                        }
                        expectEq(new BigDecimal(want), rs.getBigDecimal(2), "sum(bigint) round " + round + " run " + k);
                    }
                }
            }
        }
        check("a PreparedStatement run 20 times (named server-side statement from the 5th, binary results)");
    }

    static void errors(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            expectState("23505", "duplicate key", () -> s.executeUpdate("insert into kinds (id) values (1)"));
            expectState("42601", "syntax error", () -> s.executeQuery("selec 1"));
            expectState("42P01", "unknown table", () -> s.executeQuery("select * from nosuch"));
            expectState("42703", "unknown column", () -> s.executeQuery("select nosuch from kinds"));
            expectState("22012", "division by zero", () -> s.executeQuery("select 1/0"));
            try (ResultSet rs = s.executeQuery("select count(*) from kinds")) {
                expect(rs.next(), "the connection works after errors");
                expectEq(3, rs.getInt(1), "rows in kinds after errors");
            }
        }
        try (PreparedStatement p = c.prepareStatement("insert into kinds (id, t) values (?, ?)")) {
            for (int k = 0; k < 7; k++) {
                p.setInt(1, 1);
                p.setString(2, "dup");
                expectState("23505", "duplicate key through a prepared statement, run " + k, p::executeUpdate);
            }
            p.setInt(1, 3);
            p.setString(2, "x");
            expectEq(1, p.executeUpdate(), "the prepared statement works after its errors");
        }
        try (PreparedStatement p = c.prepareStatement("select ?::int")) {
            p.setString(1, "not a number");
            expectState("22P02", "bad integer text", p::executeQuery);
        }
        check("errors with getSQLState (23505, 42601, 42P01, 42703, 22012, 22P02); the connection stays usable");
    }

    static void transactions(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.executeUpdate("create table acct (id int primary key, balance bigint not null)");
        }
        c.setAutoCommit(false);
        try (PreparedStatement ins = c.prepareStatement("insert into acct values (?, ?)");
                Statement s = c.createStatement()) {
            ins.setInt(1, 1);
            ins.setLong(2, 100);
            ins.executeUpdate();
            c.rollback();
            try (ResultSet rs = s.executeQuery("select count(*) from acct")) {
                rs.next();
                expectEq(0, rs.getInt(1), "rows after rollback");
            }
            for (int i = 1; i <= 4; i++) {
                ins.setInt(1, i);
                ins.setLong(2, 1000);
                ins.executeUpdate();
            }
            c.commit();
            // Another connection sees what was committed, and not what is not yet.
            s.executeUpdate("update acct set balance = balance - 300 where id = 1");
            try (Connection other = connect(); Statement os = other.createStatement()) {
                try (ResultSet rs = os.executeQuery("select sum(balance), min(balance) from acct")) {
                    rs.next();
                    expectEq(4000L, rs.getLong(1), "sum seen by another connection");
                    expectEq(1000L, rs.getLong(2), "uncommitted update not seen by another connection");
                }
            }
            s.executeUpdate("update acct set balance = balance + 300 where id = 2");
            c.commit();
            // An error aborts the transaction: later statements fail with 25P02 until
            // rollback.
            s.executeUpdate("update acct set balance = 0 where id = 3");
            expectState("23505", "duplicate key in a transaction", () -> s.executeUpdate("insert into acct values (1, 0)"));
            expectState("25P02", "statement in an aborted transaction", () -> s.executeQuery("select 1"));
            c.rollback();
            try (ResultSet rs = s.executeQuery("select id, balance from acct order by id")) {
                List<String> got = new ArrayList<>();
                while (rs.next()) {
                    got.add(rs.getInt(1) + "=" + rs.getLong(2));
                }
                expectEq(List.of("1=700", "2=1300", "3=1000", "4=1000"), got, "balances after commit and rollback");
            }
            c.commit();
        } finally {
            c.setAutoCommit(true);
        }
        // DDL inside a transaction block: a rollback takes the table back, a commit keeps it.
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.executeUpdate("create table inside (a int)");
            s.executeUpdate("insert into inside values (1)");
            c.rollback();
            expectState("42P01", "a table created in a rolled-back transaction", () -> s.executeQuery("select a from inside"));
            c.rollback();
            s.executeUpdate("create table inside (a int)");
            s.executeUpdate("insert into inside values (2)");
            c.commit();
            try (ResultSet rs = s.executeQuery("select a from inside")) {
                List<String> got = new ArrayList<>();
                while (rs.next()) {
                    got.add(Integer.toString(rs.getInt(1)));
                }
                expectEq(List.of("2"), got, "a table created in a committed transaction");
            }
            s.executeUpdate("drop table inside");
            c.commit();
        } finally {
            c.setAutoCommit(true);
        }
        check("setAutoCommit(false), commit, rollback, isolation from another connection, aborted transaction (25P02), DDL taken back by a rollback");
    }

    static void batches(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.executeUpdate("create table batch (id int primary key, v text)");
        }
        try (PreparedStatement p = c.prepareStatement("insert into batch values (?, ?)")) {
            for (int i = 1; i <= 50; i++) {
                p.setInt(1, i);
                p.setString(2, "v" + i);
                p.addBatch();
            }
            int[] counts = p.executeBatch();
            expectEq(50, counts.length, "batch's count of counts");
            for (int n : counts) {
                expectEq(1, n, "each batch item's update count");
            }
        }
        try (Statement s = c.createStatement()) {
            s.addBatch("update batch set v = 'even' where id % 2 = 0");
            s.addBatch("delete from batch where id > 40");
            s.addBatch("insert into batch values (100, 'hundred')");
            int[] counts = s.executeBatch();
            expectEq("[25, 10, 1]", Arrays.toString(counts), "a Statement batch's update counts");
            try (ResultSet rs = s.executeQuery("select count(*), count(*) filter (where v = 'even') from batch")) {
                rs.next();
                expectEq(41, rs.getInt(1), "rows after the batches");
                expectEq(20, rs.getInt(2), "rows updated by the batch");
            }
        }
        // A batch with a failing item: the driver reports which, with its SQLSTATE.
        c.setAutoCommit(false);
        try (PreparedStatement p = c.prepareStatement("insert into batch values (?, ?)")) {
            for (int id : new int[] {200, 201, 1, 202}) {
                p.setInt(1, id);
                p.setString(2, "b");
                p.addBatch();
            }
            try {
                p.executeBatch();
                throw new Mismatch("a batch with a duplicate key succeeded");
            } catch (BatchUpdateException e) {
                SQLException cause = e.getNextException();
                expect(cause != null, "the batch's failure has a next exception");
                expectEq("23505", cause.getSQLState(), "the failing batch item's SQLSTATE");
            }
            c.rollback();
        } finally {
            c.setAutoCommit(true);
        }
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select count(*) from batch where id >= 200")) {
            rs.next();
            expectEq(0, rs.getInt(1), "a failed batch rolled back");
        }
        // reWriteBatchedInserts turns the batch into multi-row inserts.
        try (Connection rw = connect("reWriteBatchedInserts", "true");
                PreparedStatement p = rw.prepareStatement("insert into batch values (?, ?)")) {
            for (int i = 300; i < 437; i++) {
                p.setInt(1, i);
                p.setString(2, "rw");
                p.addBatch();
            }
            p.executeBatch();
            try (Statement s = rw.createStatement(); ResultSet rs = s.executeQuery("select count(*) from batch where v = 'rw'")) {
                rs.next();
                expectEq(137, rs.getInt(1), "rows of a rewritten batch");
            }
        }
        check("batches: PreparedStatement and Statement addBatch/executeBatch, a failing item, reWriteBatchedInserts");
    }

    static void generatedKeys(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.executeUpdate("create table items (id serial primary key, name text not null)");
        }
        try (PreparedStatement p = c.prepareStatement("insert into items (name) values (?)", Statement.RETURN_GENERATED_KEYS)) {
            for (int i = 1; i <= 7; i++) {
                p.setString(1, "item " + i);
                expectEq(1, p.executeUpdate(), "insert with generated keys #" + i);
                try (ResultSet keys = p.getGeneratedKeys()) {
                    expect(keys.next(), "a generated key #" + i);
                    expectEq(i, keys.getInt("id"), "generated id #" + i);
                    expectEq("item " + i, keys.getString("name"), "generated row's name #" + i);
                }
            }
        }
        try (PreparedStatement p = c.prepareStatement("insert into items (name) values (?)", new String[] {"id"})) {
            p.setString(1, "by column name");
            p.executeUpdate();
            try (ResultSet keys = p.getGeneratedKeys()) {
                expect(keys.next(), "a key by column name");
                expectEq(8, keys.getInt(1), "generated id by column name");
            }
        }
        try (PreparedStatement p = c.prepareStatement("insert into items (name) values (?), (?) returning id, upper(name)")) {
            p.setString(1, "a");
            p.setString(2, "b");
            try (ResultSet rs = p.executeQuery()) {
                List<String> got = new ArrayList<>();
                while (rs.next()) {
                    got.add(rs.getInt(1) + " " + rs.getString(2));
                }
                expectEq(List.of("9 A", "10 B"), got, "INSERT ... RETURNING");
            }
        }
        check("getGeneratedKeys (RETURN_GENERATED_KEYS and by column name) and INSERT ... RETURNING");
    }

    static void datesTimesNumerics(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.executeUpdate("create table events (id int primary key, at timestamp, day date, amount numeric(12,3), atz timestamptz)");
            s.executeUpdate("insert into events values (0, '2024-02-29 13:14:15.123456', '1999-12-31', 1234.5, '2024-01-02 03:04:05+00')");
        }
        LocalDateTime ldt = LocalDateTime.of(2023, 7, 14, 9, 30, 15, 250_000_000);
        LocalDate day = LocalDate.of(2000, 2, 29);
        OffsetDateTime odt = OffsetDateTime.of(2022, 12, 31, 23, 59, 59, 0, ZoneOffset.UTC);
        try (PreparedStatement p = c.prepareStatement("insert into events values (?, ?, ?, ?, ?)")) {
            p.setInt(1, 1);
            p.setTimestamp(2, Timestamp.valueOf(ldt));
            p.setDate(3, Date.valueOf(day));
            p.setBigDecimal(4, new BigDecimal("-0.125"));
            p.setObject(5, odt);
            p.executeUpdate();
            p.setInt(1, 2);
            p.setObject(2, ldt.plusDays(1));
            p.setObject(3, day.plusDays(1));
            p.setObject(4, new BigDecimal("123456789.000"));
            p.setNull(5, Types.TIMESTAMP_WITH_TIMEZONE);
            p.executeUpdate();
            // setTimestamp into timestamptz: the instant, whatever the JVM's zone (pgjdbc
            // sends the JVM's local time with its offset).
            p.setInt(1, 3);
            p.setNull(2, Types.TIMESTAMP);
            p.setNull(3, Types.DATE);
            p.setNull(4, Types.NUMERIC);
            p.setTimestamp(5, Timestamp.from(odt.toInstant()));
            p.executeUpdate();
        }
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("select id, at, day, amount, atz from events order by id")) {
            expect(rs.next(), "row 0");
            expectEq(LocalDateTime.of(2024, 2, 29, 13, 14, 15, 123_456_000), rs.getObject(2, LocalDateTime.class), "timestamp literal");
            expectEq(Timestamp.valueOf("2024-02-29 13:14:15.123456"), rs.getTimestamp(2), "getTimestamp");
            expectEq(LocalDate.of(1999, 12, 31), rs.getObject(3, LocalDate.class), "date literal");
            expectEq(Date.valueOf("1999-12-31"), rs.getDate(3), "getDate");
            expectEq(new BigDecimal("1234.500"), rs.getBigDecimal(4), "numeric(12,3) at its scale");
            expectEq(OffsetDateTime.of(2024, 1, 2, 3, 4, 5, 0, ZoneOffset.UTC), rs.getObject(5, OffsetDateTime.class), "timestamptz literal");
            expect(rs.next(), "row 1");
            expectEq(ldt, rs.getTimestamp(2).toLocalDateTime(), "setTimestamp read back");
            expectEq(day, rs.getDate(3).toLocalDate(), "setDate read back");
            expectEq(new BigDecimal("-0.125"), rs.getBigDecimal(4), "negative numeric read back");
            expectEq(odt, rs.getObject(5, OffsetDateTime.class), "setObject(OffsetDateTime) read back");
            expect(rs.next(), "row 2");
            expectEq(ldt.plusDays(1), rs.getObject(2, LocalDateTime.class), "setObject(LocalDateTime) read back");
            expectEq(day.plusDays(1), rs.getObject(3, LocalDate.class), "setObject(LocalDate) read back");
            expectEq(new BigDecimal("123456789.000"), rs.getBigDecimal(4), "large numeric read back");
            expectEq(null, rs.getObject(5), "NULL timestamptz");
            expect(rs.wasNull(), "wasNull after NULL timestamptz");
            expect(rs.next(), "row 3");
            expectEq(odt.toInstant(), rs.getTimestamp(5).toInstant(), "setTimestamp into timestamptz read back");
            expectEq(odt, rs.getObject(5, OffsetDateTime.class), "setTimestamp into timestamptz as OffsetDateTime");
            ResultSetMetaData md = rs.getMetaData();
            expectEq(Types.TIMESTAMP, md.getColumnType(2), "timestamp's JDBC type");
            expectEq(Types.DATE, md.getColumnType(3), "date's JDBC type");
            expectEq(Types.NUMERIC, md.getColumnType(4), "numeric's JDBC type");
            expectEq("timestamptz", md.getColumnTypeName(5), "timestamptz's type name");
        }
        // The same reads through a named server-side statement (binary results where
        // pgjdbc asks for them), and a date range as parameters.
        try (PreparedStatement q = c.prepareStatement("select at, day, amount from events where day between ? and ? order by id")) {
            for (int k = 0; k < 7; k++) {
                q.setDate(1, Date.valueOf("1999-01-01"));
                q.setObject(2, LocalDate.of(2000, 2, 29));
                try (ResultSet rs = q.executeQuery()) {
                    expect(rs.next(), "first of the date range, run " + k);
                    expectEq(LocalDateTime.of(2024, 2, 29, 13, 14, 15, 123_456_000), rs.getObject(1, LocalDateTime.class), "timestamp, run " + k);
                    expectEq(LocalDate.of(1999, 12, 31), rs.getObject(2, LocalDate.class), "date, run " + k);
                    expectEq(new BigDecimal("1234.500"), rs.getBigDecimal(3), "numeric, run " + k);
                    expect(rs.next(), "second of the date range, run " + k);
                    expectEq(ldt, rs.getObject(1, LocalDateTime.class), "timestamp 2, run " + k);
                    expect(!rs.next(), "two rows in the date range, run " + k);
                }
            }
        }
        check("timestamp, date, numeric and timestamptz: setTimestamp, setDate, setBigDecimal, setObject(java.time); read back");
    }

    static void fetchSize(Connection c) throws SQLException {
        // With autocommit off and a fetch size, pgjdbc reads a portal in pieces
        // (Execute with a row limit, then PortalSuspended).
        c.setAutoCommit(false);
        try (PreparedStatement p = c.prepareStatement("select g from generate_series(1, 1000) g")) {
            p.setFetchSize(64);
            try (ResultSet rs = p.executeQuery()) {
                long sum = 0;
                int n = 0;
                while (rs.next()) {
                    sum += rs.getInt(1);
                    n++;
                }
                expectEq(1000, n, "rows fetched 64 at a time");
                expectEq(500500L, sum, "their sum");
            }
            c.commit();
        } finally {
            c.setAutoCommit(true);
        }
        check("setFetchSize: a result read in pieces");
    }

    static void cancel(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.setQueryTimeout(1);
            long start = System.nanoTime();
            expectState("57014", "a statement over its query timeout",
                    () -> s.executeQuery("select count(*) from generate_series(1, 2000000000)"));
            long ms = (System.nanoTime() - start) / 1_000_000;
            expect(ms < 30_000, "canceled in " + ms + " ms");
            s.setQueryTimeout(0);
            try (ResultSet rs = s.executeQuery("select 1")) {
                expect(rs.next() && rs.getInt(1) == 1, "the connection works after a cancel");
            }
        }
        check("setQueryTimeout: a long statement canceled (57014)");
    }

    static void serverPreparedFromTheStart() throws SQLException {
        // prepareThreshold=1: every statement named on the server from its first run;
        // -1 would ask for binary from the start as well (forceBinary).
        try (Connection c = connect("prepareThreshold", "-1");
                PreparedStatement p = c.prepareStatement("select id, big, u, b, f, t from reuse where id = ? or t = ? order by id")) {
            for (int k = 0; k < 3; k++) {
                p.setInt(1, 2);
                p.setString(2, "row 4");
                try (ResultSet rs = p.executeQuery()) {
                    expect(rs.next(), "row 2 with binary from the start");
                    expectEq(2, rs.getInt(1), "id");
                    expectEq(2_000_000_014L, rs.getLong(2), "bigint");
                    expectEq(new UUID(2, -2), rs.getObject(3), "uuid");
                    expectEq(true, rs.getBoolean(4), "bool");
                    expectEq(0.5, rs.getDouble(5), "float8");
                    expectEq("row 2", rs.getString(6), "text");
                    expect(rs.next(), "row 4");
                    expectEq(4, rs.getInt(1), "id 4");
                    expect(!rs.next(), "two rows");
                }
            }
        }
        check("prepareThreshold=-1: named statements and binary results from the first run");
    }

    static void wrongPassword() {
        Properties p = new Properties();
        p.putAll(props);
        p.setProperty("password", "not the password");
        try (Connection c = DriverManager.getConnection(url, p)) {
            throw new Mismatch("connected with a wrong password");
        } catch (SQLException e) {
            expectEq("28P01", e.getSQLState(), "wrong password's SQLSTATE (" + e.getMessage() + ")");
        }
        check("a wrong password is refused (28P01)");
    }
}
