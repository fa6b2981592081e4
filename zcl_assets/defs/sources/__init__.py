"""The PostgreSQL source: the asset that lands the ZCL database, its job and schedule."""
