"""Reports: markdown tables in the papers' layouts, built from the long metrics table.

Nothing here knows Kedro; the pipelines' report nodes call these functions and save the text.
"""
