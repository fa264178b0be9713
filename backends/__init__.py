"""Real runtimes as compute engines behind the bundled driver's HAL surface
(driver/engine.py): one subpackage per runtime."""
