"""What goes over the wire: robots.txt, the host guard, credentials, cookies, bodies,
the polite throttle, and rendering in a headless Chromium."""
