-- composite_key and text_uuid_keys: rows before the snapshot.
INSERT INTO public.order_lines (order_id, line_no, sku, qty, price) VALUES
    (1, 1, 'SKU-A', 2, 12.500),
    (1, 2, 'SKU-B', 1, 3.999),
    (2, 1, 'SKU-A', 5, 12.500);
INSERT INTO public.customers (customer_id, email, name, tier) VALUES
    ('6f1c2a0e-5b7d-4e8a-9c3f-0a1b2c3d4e5f', 'ada@example.com', 'Ada', 'gold'),
    ('00000000-0000-0000-0000-000000000001', 'bob@example.com', 'Bob', NULL);
INSERT INTO public.products (sku, title, price) VALUES
    ('SKU-A', 'Widget', 12.500),
    ('SKU-B', 'Gadget, "deluxe"', 3.999),
    ('sku/ü-1', 'Ünicode key', NULL);
