"""The results table and its analysis: schema, rates and bounds, intervals, compare, recommend."""
