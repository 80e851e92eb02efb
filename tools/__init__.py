# noqa: D104
