-- Run once by the postgres image when it initialises its data directory: the Temporal server's
-- persistence and SQL visibility databases, beside the service's own (POSTGRES_DB).
CREATE DATABASE temporal;
CREATE DATABASE temporal_visibility;
