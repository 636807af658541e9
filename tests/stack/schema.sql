-- The source schema of the test stack: the tables Debezium captures in the
-- database `shop`. stack.sh loads it as the application role `app` when it
-- creates the database (and again on `stack.sh reset-db`).
--
-- Every captured table is owned by the group role `shop_owners`, shared by
-- `app` and the replication user `dbz`: with pgoutput and
-- publication.autocreate.mode=filtered Debezium runs CREATE PUBLICATION ...
-- FOR TABLE, which PostgreSQL allows only to a table's owner. Membership in
-- the owner role also gives `dbz` the SELECT it needs for snapshots.
--
-- Replica identity is left at DEFAULT on purpose: unchanged TOASTed columns
-- then arrive as Debezium's `__debezium_unavailable_value` placeholder, and
-- `before` images hold only the key, which is what the decoder must handle.

\set ON_ERROR_STOP on

-- orders: a single int key; one column of each kind the decoder must read.
--   status     nullable with a default, to show NULL is not replaced by it
--   amount     NUMERIC(10,2): base64 unscaled bytes in precise mode
--   note       long text: values above ~2 kB are TOASTed out of line
--   created_at TIMESTAMP(6): microseconds since the epoch
--   paid       boolean
--   weight_kg  unconstrained NUMERIC: {"scale","value"} struct in precise mode
--   shipped_at TIMESTAMPTZ: ISO-8601 string in UTC
CREATE TABLE public.orders (
    order_id   int PRIMARY KEY,
    status     text DEFAULT 'new',
    amount     numeric(10,2),
    note       text,
    created_at timestamp NOT NULL DEFAULT now(),
    paid       boolean DEFAULT false,
    weight_kg  numeric,
    shipped_at timestamptz
);

-- order_lines: a composite primary key; its Kafka key has both columns.
CREATE TABLE public.order_lines (
    order_id int NOT NULL,
    line_no  int NOT NULL,
    sku      text NOT NULL,
    qty      int NOT NULL DEFAULT 1,
    price    numeric(12,3),
    PRIMARY KEY (order_id, line_no)
);

-- customers: a uuid primary key (a JSON string in the Kafka key).
CREATE TABLE public.customers (
    customer_id uuid PRIMARY KEY,
    email       text UNIQUE,
    name        text,
    tier        text
);

-- products: a text primary key.
CREATE TABLE public.products (
    sku   text PRIMARY KEY,
    title text,
    price numeric(12,3)
);

ALTER TABLE public.orders      OWNER TO shop_owners;
ALTER TABLE public.order_lines OWNER TO shop_owners;
ALTER TABLE public.customers   OWNER TO shop_owners;
ALTER TABLE public.products    OWNER TO shop_owners;
