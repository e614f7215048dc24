# gaplanner REST service: CPU-only, slim Python, runs as a non-root user.
#   docker build -t gaplanner .
#   docker run -p 8000:8000 -v gaplanner-data:/data -e GAPLANNER_API_KEY=change-me gaplanner
FROM python:3.11-slim

# The kernels are C++ compiled by the package's build.
RUN apt-get update && apt-get install -y --no-install-recommends g++ && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin gaplanner \
    && mkdir -p /data \
    && chown gaplanner:gaplanner /data

WORKDIR /opt/gaplanner
COPY pyproject.toml setup.py README.md ./
COPY gaplanner ./gaplanner
COPY service ./service
RUN pip install '.[service]' \
    && rm -rf /opt/gaplanner/build

USER gaplanner
ENV GAPLANNER_DB=/data/gaplanner.sqlite3
# The install compiled the kernels; this user plans with them (fails if they do not load).
RUN gaplanner plan example:seed000_queue > /dev/null

VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/v1/health', timeout=4)"]
# GAPLANNER_WORKERS sets the searches run at once (default: the cores Python sees, which in a
# container may be the host's: set it to the CPUs you give the container).
CMD ["gaplanner", "serve", "--host", "0.0.0.0", "--port", "8000"]
