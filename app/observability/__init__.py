"""What newsagg tells its operators: Prometheus metrics shared by every process of a host, and structured logs."""
