"""Retrieval from all three tiers for a question (`search.retrieve`), and every other piece of vector SQL in the
project: `search` runs a retrieval, `channels` holds its statements and fusion, `rows` sends them and reads their
rows, `result` is what it returns, `config` how it ranks, `side_readers` the connections that read beside a
request's own, `placement` and `vector_reads` the vector reads of placement, the console and the bench."""
