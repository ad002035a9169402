"""Search measured and trained, off the serving path: the figures `toolsearch eval` reports
(`evaluation`), fitting the learned ranking (`training`) and the abstention model
(`abstention_training`), and what an index makes of a request (`inspection`). Serving never imports
this package.
"""
