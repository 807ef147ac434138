from agentsh.proxy.main import main

main()
