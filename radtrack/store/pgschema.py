"""A new PostgreSQL tracking store's tables, made once by radtrack before any script opens it.

MLflow makes a database's tables the first time a process opens it; nodes writing one
database directly (docs/deployment.md, section 7) that start at once would each run MLflow's
creation. radtrack makes them in the launch's up-front check (after its login check) and in
its own client, under a PostgreSQL session advisory lock: the processes wait for one another
and the first makes them. Each of MLflow's two steps (the initial tables, then its
migrations) is one transaction on PostgreSQL, so a kill leaves a state MLflow resumes from.
"""

from __future__ import annotations

from radtrack.store.storestate import CORE_TABLES

LOCK_KEY = 0x72616474726B  # the advisory lock radtrack makes a PostgreSQL store's tables under


def create(uri: str) -> bool | None:
    """Make MLflow's tables in the PostgreSQL database at ``uri`` when it has none, under a
    session advisory lock (radtrack processes creating it at once wait for one another; each
    of MLflow's two steps is one transaction there, so a kill leaves a state MLflow resumes
    from); True when this process made them, False when they were there. None where it
    could not ask: no driver, or a database that answers nothing (away, login refused: the
    callers' own checks say so, radtrack/store/reach.py)."""
    try:
        import sqlalchemy
        from sqlalchemy.pool import NullPool
    except ImportError:
        return None
    try:
        engine = sqlalchemy.create_engine(uri, poolclass=NullPool)
    except Exception:  # noqa: BLE001 - no driver, an odd URI: MLflow reports it as before
        return None
    made = False
    try:
        with engine.connect() as conn:
            if _pg_whole(conn):
                return False
            conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": LOCK_KEY})
            conn.commit()
            try:
                if not _pg_whole(conn):
                    from mlflow.store.db import utils

                    from radtrack.store.storestate import quiet_creation

                    with quiet_creation():
                        utils._initialize_tables(engine)
                    made = True
            finally:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), {"k": LOCK_KEY})
                conn.commit()
    except sqlalchemy.exc.OperationalError:
        return None  # away or refused: said where the launch asks (reach.py)
    finally:
        engine.dispose()
    return made


def _pg_whole(conn) -> bool:  # noqa: ANN001 - a SQLAlchemy connection
    import sqlalchemy

    tables = set(sqlalchemy.inspect(conn).get_table_names())
    conn.commit()
    return "alembic_version" in tables and CORE_TABLES <= tables
