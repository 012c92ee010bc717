#!/bin/sh
# Sets up DIR for one of the shipped replay examples and prints the command to capture.
# Usage: make_examples.sh git|make|sqlite DIR   (tests/test_replay_e2e.py; docs/replay.md)
set -e
kind=$1; dir=$2
here=$(cd "$(dirname "$0")" && pwd)
case $kind in
git)
  git init -q "$dir/src"
  for i in $(seq 1 30); do printf 'line %s\n' $(seq 1 $i) > "$dir/src/file$i.txt"; done
  mkdir "$dir/src/sub" && echo nested > "$dir/src/sub/n.txt"
  git -C "$dir/src" add -A
  git -C "$dir/src" -c user.name=fslab -c user.email=fslab@example.org commit -qm init
  echo "git clone -q src dst" ;;
make)
  mkdir "$dir/proj"
  cp "$here/proj/"* "$dir/proj/"
  tar cf "$dir/proj.tar" -C "$dir" proj
  rm -r "$dir/proj"
  echo "sh -c 'tar xf proj.tar && make -s -C proj -j2'" ;;
sqlite)
  cp "$here/inserts.py" "$dir/"
  echo "python3 inserts.py" ;;
esac
