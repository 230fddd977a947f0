from fbbench.cli import main

main()
