# Sourced by the benchmark scripts (bash): one nginx on loopback for a run, in a work folder.
#
#   source "$ROOT/Benchmarks/nginx.sh"
#   nginx_binary > /dev/null || exit 1     (early, before a long build)
#   PORT=$(free_port)
#   start_nginx "$WORK" "lines inside http { }" "lines inside its server { }"
#   (or serve_work "$WORK" "lines inside http { }": the work folders, PORT and nginx in one)
#
# start_nginx WORK HTTP_LINES SERVER_LINES writes WORK/nginx.conf (logs and temp files under
# WORK, root WORK/www, listening on 127.0.0.1:$PORT, with the listen parameters in
# NGINX_LISTEN_OPTIONS if set, such as `sndbuf=64k`), starts nginx in the foreground of a
# background job, removes it on exit (trap) and waits until the port answers. Sets NGINX_PID.

nginx_binary() {  # the path of nginx, or a message and status 1
    local nginx
    nginx=$(command -v nginx || echo /usr/sbin/nginx)
    [[ -x $nginx ]] || { echo "nginx is not installed" >&2; return 1; }
    echo "$nginx"
}

# serve_work WORK HTTP_LINES: makes WORK/www and WORK/out, names WORK on stderr, picks PORT and
# starts nginx there (start_nginx).
serve_work() {
    mkdir -p "$1"/{www,out}
    echo "work folder: $1" >&2
    PORT=$(free_port)
    start_nginx "$1" "${2:-}"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_nginx() {
    local work=$1 http_lines=${2:-} server_lines=${3:-} nginx user_line=""
    nginx=$(nginx_binary) || return 1
    [[ $(id -u) == 0 ]] && user_line="user root;"
    mkdir -p "$work"/{www,tmp,logs}
    cat > "$work/nginx.conf" <<EOF
$user_line
worker_processes 2;
daemon off;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 1024; }
http {
    sendfile on;
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    $http_lines
    server {
        listen 127.0.0.1:$PORT${NGINX_LISTEN_OPTIONS:+ $NGINX_LISTEN_OPTIONS};
        root $work/www;
        $server_lines
    }
}
EOF
    "$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/logs/error.log" &
    NGINX_PID=$!
    trap 'kill $NGINX_PID 2>/dev/null; wait $NGINX_PID 2>/dev/null || true' EXIT
    for _ in $(seq 100); do
        (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nginx did not answer on 127.0.0.1:$PORT (see $work/logs/error.log)" >&2
    return 1
}
