-- An SQLite database that is not an nsys export (a scalescope sweep store shape).
CREATE TABLE runs (id INTEGER PRIMARY KEY, gpus INTEGER, seconds REAL);
INSERT INTO runs VALUES (1, 8, 12.5);
