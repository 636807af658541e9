-- composite_key and text_uuid_keys: changes once the connector streams.

-- composite key
INSERT INTO public.order_lines (order_id, line_no, sku, qty, price) VALUES (2, 2, 'SKU-C', 1, NULL);
UPDATE public.order_lines SET qty = 3, price = 11.000 WHERE order_id = 1 AND line_no = 1;
DELETE FROM public.order_lines WHERE order_id = 1 AND line_no = 2;
-- key change in one column of the composite key: delete (1,1), tombstone, create (1,3)
UPDATE public.order_lines SET line_no = 3 WHERE order_id = 1 AND line_no = 1;

-- uuid key
INSERT INTO public.customers (customer_id, email, name, tier)
    VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'cy@example.com', 'Cy', 'silver');
UPDATE public.customers SET tier = 'gold' WHERE customer_id = '00000000-0000-0000-0000-000000000001';
UPDATE public.customers SET customer_id = 'ffffffff-ffff-ffff-ffff-ffffffffffff'
    WHERE customer_id = '6f1c2a0e-5b7d-4e8a-9c3f-0a1b2c3d4e5f';
DELETE FROM public.customers WHERE customer_id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11';

-- text key
INSERT INTO public.products (sku, title, price) VALUES ('SKU-C', 'Gizmo', 0.001);
UPDATE public.products SET price = 13.000 WHERE sku = 'SKU-A';
UPDATE public.products SET sku = 'SKU-B2' WHERE sku = 'SKU-B';
DELETE FROM public.products WHERE sku = 'sku/ü-1';
